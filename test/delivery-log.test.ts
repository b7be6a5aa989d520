import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { WebhookDelivery, type DeliveryResult } from "../src/domain/webhooks/delivery.ts";
import { DeliveryLog } from "../src/domain/webhooks/delivery-log.ts";
import { GroupCommit, LaggingCommit } from "../src/store/index.ts";
import { createOwnedApp } from "./helpers/automation.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// A delivery is answered before its record is stored; records are written together a few
// milliseconds later (DeliveryLog). These drive the log of a real server's store directly, with
// delays chosen so that nothing but the rule under test can write a record.
describeEachDialect("webhook delivery log", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let hookId: string;
  beforeAll(async () => {
    server = await startServer({ dialect });
    owner = await makeUser(server);
    const appId = await createOwnedApp(server, owner.token, "delivery-log");
    hookId = (await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "whoami" }, { token: owner.token })).body.webhook.id;
  });
  afterAll(async () => server.close());

  const stored = async () => (await server.ctx.db.selectFrom("webhook_deliveries").select(["status", "outcome"]).where("webhook_id", "=", hookId).execute()).length;
  const result = (status: number): DeliveryResult => ({ ts: server.ctx.clock.now(), status, response: "{}", error: null, authenticated: true, attempted: true, deferred: false, durationMs: 1 });
  const deliveryWith = (log: DeliveryLog) => new WebhookDelivery(server.ctx.db, server.ctx.clock, server.ctx.runner, log);
  const forever = 3_600_000;
  const refused: unknown[] = [];
  afterEach(() => {
    expect(refused).toEqual([]);
  });
  const logOf = (delayMs: number) =>
    new DeliveryLog(new GroupCommit(server.ctx.db, server.ctx.store.dialect), dialect === "sqlite" ? new LaggingCommit(server.ctx.db) : null, (error) => refused.push(error), delayMs);

  it("stores a record only when its delay is over or a reader settles the log, then with the webhook's last outcome", async () => {
    const log = logOf(forever);
    const delivery = deliveryWith(log);
    const before = await stored();
    const target = await delivery.target(hookId);
    await delivery.record(target, Buffer.from('{"a":1}'), result(200));
    await delivery.record(target, Buffer.from('{"a":2}'), result(200));
    // Written neither by the answer nor by the next turns of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await stored()).toBe(before);
    await delivery.settled();
    expect(await stored()).toBe(before + 2);
    const row = await server.ctx.db.selectFrom("webhooks").select(["last_outcome", "consecutive_failures"]).where("id", "=", hookId).executeTakeFirstOrThrow();
    expect(row).toEqual({ last_outcome: "success", consecutive_failures: 0 });
  });

  it("writes on its own once the delay is over", async () => {
    const log = logOf(20);
    const delivery = deliveryWith(log);
    const before = await stored();
    await delivery.record(await delivery.target(hookId), Buffer.from("{}"), result(200));
    await vi.waitFor(async () => expect(await stored()).toBe(before + 1), { timeout: 5000, interval: 10 });
  });

  it("writes at once when 64 records wait, without waiting for the delay", async () => {
    const log = logOf(forever);
    const delivery = deliveryWith(log);
    const before = await stored();
    const target = await delivery.target(hookId);
    for (let i = 0; i < 64; i++) await delivery.record(target, Buffer.from(`{"i":${i}}`), result(200));
    await vi.waitFor(async () => expect(await stored()).toBe(before + 64), { timeout: 5000, interval: 10 });
  });

  it("answers a delivery before its record is stored; the API's next read of the log includes it", async () => {
    const hook = (await server.client.post(`/api/v1/apps/${await createOwnedApp(server, owner.token, "delivery-log-2")}/webhooks`, { op: "whoami" }, { token: owner.token })).body.webhook;
    for (let i = 0; i < 3; i++) expect((await server.client.post(`/api/v1/hooks/${hook.id}`, { i }, { token: hook.secret })).status).toBe(200);
    const listed = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries`, { token: owner.token })).body.deliveries as { requestBody: string }[];
    expect(listed.map((r) => JSON.parse(r.requestBody).i)).toEqual([2, 1, 0]);
    expect((await server.client.get(`/api/v1/webhooks/${hook.id}`, { token: owner.token })).body.webhook).toMatchObject({ last_outcome: "success" });
  });
});
