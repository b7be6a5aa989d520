import { afterAll, beforeAll, expect, it } from "vitest";
import { WebhookDelivery, type DeliveryResult } from "../../src/domain/webhooks/delivery.ts";
import { DeliveryLog } from "../../src/domain/webhooks/delivery-log.ts";
import { GroupCommit, LaggingCommit } from "../../src/store/index.ts";
import { createOwnedApp } from "../helpers/automation.ts";
import { makeUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// Delivery records of many webhooks share a transaction (DeliveryLog). An owner who deletes an
// app while its deliveries' records wait makes those records fail (their app is gone): that
// must cost them only, never the records of someone else's deliveries written in the same batch.
describeEachDialect("hostile: delivery records sharing a transaction", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  const hookOn = async (token: string, manifestId: string) =>
    (await server.client.post(`/api/v1/apps/${await createOwnedApp(server, token, manifestId)}/webhooks`, { op: "whoami" }, { token })).body.webhook as { id: string; app_id: string };
  const result = (): DeliveryResult => ({ ts: server.ctx.clock.now(), status: 200, response: "{}", error: null, attempted: true, deferred: false, durationMs: 1 });

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
    delivery.record(b, Buffer.from('{"n":1}'), result());
    delivery.record(a, Buffer.from('{"n":2}'), result());
    delivery.record(b, Buffer.from('{"n":3}'), result());
    expect((await server.client.delete(`/app/${doomed.app_id}`, { token: attacker.token })).status).toBe(200);
    await log.settled();
    const kept = await server.ctx.db.selectFrom("webhook_deliveries").select(["webhook_id", "request_body"]).where("webhook_id", "in", [doomed.id, innocent.id]).orderBy("seq").execute();
    expect(kept).toEqual([
      { webhook_id: innocent.id, request_body: '{"n":1}' },
      { webhook_id: innocent.id, request_body: '{"n":3}' },
    ]);
    expect(refused).toHaveLength(1);
  });
});
