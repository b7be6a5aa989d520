import type { Transaction } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WebhookDelivery, type DeliveryResult } from "../../src/domain/webhooks/delivery.ts";
import { DeliveryLog, MAX_BACKLOG } from "../../src/domain/webhooks/delivery-log.ts";
import { GroupCommit, LaggingCommit, type Database } from "../../src/store/index.ts";
import { createOwnedApp } from "../helpers/automation.ts";
import { makeUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// Delivery records of many webhooks share a transaction (DeliveryLog). An owner who deletes an
// app while its deliveries' records wait makes those records fail (their app is gone): that
// must cost them only, never the records of someone else's deliveries written in the same batch.
// And records wait in memory only so long: a flood against a stalled store slows its senders.
describeEachDialect("hostile: delivery records sharing a transaction", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  const hookOn = async (token: string, manifestId: string) =>
    (await server.client.post(`/api/v1/apps/${await createOwnedApp(server, token, manifestId)}/webhooks`, { op: "whoami" }, { token })).body.webhook as { id: string; app_id: string };
  const result = (): DeliveryResult => ({ ts: server.ctx.clock.now(), status: 200, response: "{}", error: null, authenticated: true, attempted: true, deferred: false, durationMs: 1 });

  it("stores a bystander's records when an attacker's app is deleted while its records wait beside them", async () => {
    const attacker = await makeUser(server);
    const bystander = await makeUser(server);
    const doomed = await hookOn(attacker.token, "doomed");
    const innocent = await hookOn(bystander.token, "innocent");
    const refused: unknown[] = [];
    const lagging = dialect === "sqlite" ? new LaggingCommit(server.ctx.db) : null;
    const log = new DeliveryLog(new GroupCommit(server.ctx.db, server.ctx.store.dialect), lagging, (error) => refused.push(error), 3_600_000);
    const delivery = new WebhookDelivery(server.ctx.db, server.ctx.clock, server.ctx.runner, log);
    const [a, b] = [await delivery.target(doomed.id), await delivery.target(innocent.id)];
    await delivery.record(b, Buffer.from('{"n":1}'), result());
    await delivery.record(a, Buffer.from('{"n":2}'), result());
    await delivery.record(b, Buffer.from('{"n":3}'), result());
    expect((await server.client.delete(`/app/${doomed.app_id}`, { token: attacker.token })).status).toBe(200);
    await log.settled();
    const kept = await server.ctx.db.selectFrom("webhook_deliveries").select(["webhook_id", "request_body"]).where("webhook_id", "in", [doomed.id, innocent.id]).orderBy("seq").execute();
    expect(kept).toEqual([
      { webhook_id: innocent.id, request_body: '{"n":1}' },
      { webhook_id: innocent.id, request_body: '{"n":3}' },
    ]);
    expect(refused).toHaveLength(1);
  });

  it("makes senders wait once the store falls behind, rather than keep their bodies in memory", async () => {
    const owner = await makeUser(server);
    const hook = await hookOn(owner.token, "flooded");
    // The store stalls (a slow disk, a busy database) until the gate opens.
    let open = () => undefined as void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    class Stalled extends GroupCommit {
      override run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
        return gate.then(() => super.run(work));
      }
    }
    const refused: unknown[] = [];
    const log = new DeliveryLog(new Stalled(server.ctx.db, server.ctx.store.dialect), null, (error) => refused.push(error), 3_600_000);
    const delivery = new WebhookDelivery(server.ctx.db, server.ctx.clock, server.ctx.runner, log);
    const target = await delivery.target(hook.id);
    const body = Buffer.from('{"flood":true}');
    // Up to MAX_BACKLOG batches of 64 wait for the store without holding anyone up...
    for (let i = 0; i < 64 * MAX_BACKLOG; i++) await delivery.record(target, body, result());
    // ...the batch past them makes its sender wait until the store has caught up.
    for (let i = 0; i < 63; i++) await delivery.record(target, body, result());
    const held = delivery.record(target, body, result());
    const state = await Promise.race([held.then(() => "answered"), new Promise((resolve) => setImmediate(() => resolve("waiting")))]);
    expect(state).toBe("waiting");
    open();
    await held;
    await log.settled();
    const stored = await server.ctx.db.selectFrom("webhook_deliveries").select("id").where("webhook_id", "=", hook.id).execute();
    expect(stored).toHaveLength(64 * (MAX_BACKLOG + 1));
    expect(refused).toEqual([]);
  });
});
