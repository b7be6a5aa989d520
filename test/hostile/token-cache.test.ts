import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser } from "../helpers/accounts.ts";
import { expectError } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// An op call keeps the token rows it read and trusts one while the token epoch read with the app
// has not moved (migration 022). Each way a token can stop working must refuse it at the very next
// call, however warm the cache: the epoch is moved by triggers, even for changes made past the
// service's own code.
const APP = `export const manifest = { id: "cached-token", routes: { ping: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "pong" }); } };`;

describeEachDialect("hostile: tokens cached by op calls", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  const warm = async (appId: string, token: string) => {
    for (let i = 0; i < 3; i++) expect((await server.client.post(`/app/${appId}/api/ping`, {}, { token })).body).toEqual({ ok: true, value: "pong" });
  };

  it("refuses a token at the next call after its owner revokes it", async () => {
    const owner = await createUser(server);
    const appId = (await server.client.post("/app", { module: APP }, { token: owner.token })).body.id as string;
    const minted = await server.client.post("/api/token", { name: "soon gone" }, { token: owner.token });
    await warm(appId, minted.body.token);
    expect((await server.client.delete(`/api/token/${minted.body.id}`, { token: owner.token })).status).toBe(200);
    const refused = expectError(await server.client.post(`/app/${appId}/api/ping`, {}, { token: minted.body.token }), 401, "unauthorized");
    expect(refused.reason).toBe("token_revoked");
  });

  it("refuses an unclaimed app's token at the next call after the app is claimed", async () => {
    const created = await server.client.post("/app", { module: APP });
    const { id, token } = created.body as { id: string; token: string };
    await warm(id, token);
    const owner = await createUser(server);
    expect((await server.client.post(`/app/${id}/claim`, { token }, { token: owner.token })).status).toBe(200);
    const refused = expectError(await server.client.post(`/app/${id}/api/ping`, {}, { token }), 401, "unauthorized");
    expect(refused.reason).toBe("token_revoked_post_claim");
  });

  it("refuses a token at the next call once its row is gone, even removed straight from the database", async () => {
    const owner = await createUser(server);
    const other = await createUser(server);
    const appId = (await server.client.post("/app", { module: APP }, { token: owner.token })).body.id as string;
    await warm(appId, owner.token);
    // The user goes (an operator's cleanup, say) and their tokens with them, by cascade.
    await server.ctx.db.deleteFrom("apps").where("owner_user_id", "=", owner.id).execute();
    await server.ctx.db.deleteFrom("users").where("id", "=", owner.id).execute();
    const refused = expectError(await server.client.post(`/app/${appId}/api/ping`, {}, { token: owner.token }), 401, "unauthorized");
    expect(refused.reason).toBe("token_unknown");
    // Someone else's warm token is unaffected beyond one re-read.
    const theirs = (await server.client.post("/app", { module: APP }, { token: other.token })).body.id as string;
    await warm(theirs, other.token);
  });
});
