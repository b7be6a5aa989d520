import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { expectError } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { LogCapture } from "./helpers/logs.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const SECRET_VALUE = "sk_live_do-not-leak-7f3a9c";
// App code reports the value reversed, so no response ever needs to carry the value itself.
const REVERSED = [...SECRET_VALUE].reverse().join("");

function moduleFor(id: string): string {
  return `export const manifest = { id: "${id}", capabilities: { imports: ["svc:logging/emit@1.0"] }, routes: { peek: { access: "read" }, boom: { access: "read" } } };
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    if (op === "boom") {
      await env.LOG.emit("error", "about to fail with " + env.API_KEY, { key: env.API_KEY });
      throw new Error("failed with " + env.API_KEY);
    }
    const names = Object.keys(env).sort();
    return Response.json({ ok: true, value: { names, length: env.API_KEY ? env.API_KEY.length : null, reversed: env.API_KEY ? [...env.API_KEY].reverse().join("") : null } });
  },
};`;
}

describeEachDialect("secrets over HTTP", (dialect) => {
  let server: TestServer;
  let owner: TestUser;
  let appId: string;
  let appToken: string;
  const logs = new LogCapture();
  beforeAll(async () => {
    server = await startServer({ dialect, logStream: logs, env: { LOG_LEVEL: "debug" } });
    owner = await createUser(server);
    const created = await server.client.post("/app", { module: moduleFor("vault") });
    appId = created.body.id;
    appToken = created.body.token;
  });
  afterAll(async () => server.close());

  it("refuses secrets on an unclaimed app, to app tokens, and to non-owners", async () => {
    expectError(await server.client.get(`/app/${appId}/secrets`, { token: owner.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/secrets`, { token: appToken }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/secrets`), 401, "sign_in_required");
    expectError(await server.client.get(`/app/00000000-0000-4000-8000-000000000000/secrets`, { token: owner.token }), 404, "app_not_found");
    expectError(await server.client.get(`/app/not-a-uuid/secrets`, { token: owner.token }), 400, "invalid_id");

    expect((await server.client.post(`/app/${appId}/claim`, { token: appToken }, { token: owner.token })).status).toBe(200);
    const stranger = await createUser(server);
    expectError(await server.client.get(`/app/${appId}/secrets`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${appId}/secrets`, { name: "X", value: "y" }, { token: stranger.token }), 403, "forbidden");
  });

  it("creates, lists names, shows the value to app code only, replaces and deletes", async () => {
    const created = await server.client.post(`/app/${appId}/secrets`, { name: "API_KEY", value: SECRET_VALUE }, { token: owner.token });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ ok: true, name: "API_KEY" });
    expectError(await server.client.post(`/app/${appId}/secrets`, { name: "API_KEY", value: "again" }, { token: owner.token }), 409, "secret_already_exists");
    expect((await server.client.get(`/app/${appId}/secrets`, { token: owner.token })).body).toEqual({ ok: true, names: ["API_KEY"] });

    const peek = await server.client.post(`/app/${appId}/api/peek`, {}, { token: owner.token });
    expect(peek.body.value).toEqual({ names: ["API_KEY", "LOG"], length: SECRET_VALUE.length, reversed: REVERSED });

    // A change is seen by the very next call.
    const replaced = await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: "short" }, { token: owner.token });
    expect(replaced.body).toEqual({ ok: true, name: "API_KEY", created: false });
    expect((await server.client.post(`/app/${appId}/api/peek`, {}, { token: owner.token })).body.value).toMatchObject({ length: 5, reversed: "trohs" });
    expect((await server.client.put(`/app/${appId}/secrets/OTHER`, { value: "v" }, { token: owner.token })).body.created).toBe(true);

    expect((await server.client.delete(`/app/${appId}/secrets/OTHER`, { token: owner.token })).status).toBe(200);
    expectError(await server.client.delete(`/app/${appId}/secrets/OTHER`, { token: owner.token }), 404, "secret_not_found");
    await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: SECRET_VALUE }, { token: owner.token });
  });

  it("refuses bad names and oversized values with the spec's kinds", async () => {
    for (const name of ["lower", "9LIVES", "HAS-DASH", "KV"]) {
      expectError(await server.client.post(`/app/${appId}/secrets`, { name, value: "v" }, { token: owner.token }), 400, "invalid_secret_name");
    }
    expectError(await server.client.put(`/app/${appId}/secrets/bad-name`, { value: "v" }, { token: owner.token }), 400, "invalid_secret_name");
    const big = expectError(await server.client.put(`/app/${appId}/secrets/BIG`, { value: "x".repeat(8193) }, { token: owner.token }), 400, "secret_too_large");
    expect(big.recovery).toMatchObject({ kind: "shrink", field: "secret", size_bytes: 8193, cap_bytes: 8192 });
    expectError(await server.client.post(`/app/${appId}/secrets`, { name: "A", value: "v", note: 1 }, { token: owner.token }), 400, "invalid_request");
  });

  // Secrets are kept per (owner, manifest id); a deleted app's would otherwise pass, unlisted and
  // out of reach, to whatever code next takes its manifest id (another's app copied in, say).
  it("go with their app: an app made again under the same manifest id starts without them", async () => {
    const upsert = await server.client.post("/app", { module: moduleFor("keeper") }, { token: owner.token });
    expect((await server.client.put(`/app/${upsert.body.id}/secrets/API_KEY`, { value: SECRET_VALUE }, { token: owner.token })).status).toBe(200);
    expect((await server.client.post(`/app/${upsert.body.id}/api/peek`, {}, { token: owner.token })).body.value.reversed).toBe(REVERSED);
    expect((await server.client.delete(`/app/${upsert.body.id}`, { token: owner.token })).status).toBe(200);
    const again = await server.client.post("/app", { module: moduleFor("keeper") }, { token: owner.token });
    expect(again.body.id).not.toBe(upsert.body.id);
    expect((await server.client.get(`/app/${again.body.id}/secrets`, { token: owner.token })).body.names).toEqual([]);
    const peeked = (await server.client.post(`/app/${again.body.id}/api/peek`, {}, { token: owner.token })).body.value;
    expect(peeked.names).not.toContain("API_KEY");
    expect(peeked.reversed).toBeNull();
    const left = await server.ctx.db.selectFrom("secrets").select("name").where("owner_user_id", "=", owner.id).where("manifest_id", "=", "keeper").execute();
    expect(left).toEqual([]);
  });

  it("never shows a secret value in a response, a log line or an activity row", async () => {
    const boom = await server.client.post(`/app/${appId}/api/boom`, {}, { token: owner.token });
    expect(boom.status).toBe(500);
    expect(boom.body.error.message).toBe("Error: failed with [secret API_KEY]");
    const diag = JSON.stringify(server.ctx.diag.list(appId));
    expect(diag).toContain("about to fail with [secret API_KEY]");
    expect(diag).not.toContain(SECRET_VALUE);
    const responses = [
      boom.text,
      (await server.client.get(`/app/${appId}/secrets`, { token: owner.token })).text,
      (await server.client.get(`/app/${appId}/source`, { token: owner.token })).text,
    ];
    for (const text of responses) expect(text).not.toContain(SECRET_VALUE);
    const rows = await server.ctx.db.selectFrom("activity_events").selectAll().execute();
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain(SECRET_VALUE);
    expect(JSON.stringify(await server.ctx.db.selectFrom("secrets").selectAll().execute())).not.toContain(SECRET_VALUE);
    expect(logs.text.length).toBeGreaterThan(0);
    expect(logs.text).not.toContain(SECRET_VALUE);
  });
});
