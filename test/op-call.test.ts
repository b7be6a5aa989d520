import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { expectError } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const COUNTER = `export const manifest = {
  id: "counter",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: {
    bump: { access: "write", input: { type: "object", properties: { by: { type: "integer" } }, additionalProperties: false } },
    read: { access: "read", output: { type: "object", properties: { count: { type: "integer" } }, required: ["count"] } },
    whoami: { access: "read" },
    fail: { access: "read" },
  },
};

export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    if (op === "whoami") {
      return Response.json({ ok: true, value: { role: request.headers.get("x-svc-role"), trigger: request.headers.get("x-svc-trigger"), user: request.headers.get("x-svc-user") } });
    }
    if (op === "fail") return Response.json({ ok: false, error: { message: "nope" } });
    const body = await request.json();
    const count = (await env.KV.get("count")) ?? 0;
    if (op === "bump") {
      await env.KV.set("count", count + (body.by ?? 1));
      return Response.json({ ok: true, value: { count: count + (body.by ?? 1) } });
    }
    return Response.json({ ok: true, value: { count } });
  },
};
`;

describeEachDialect("POST /app/{id}/api/{operation}", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  it("runs ops in workerd with the app token, keeps KV, validates input and output", async () => {
    const created = await server.client.post("/app", { module: COUNTER });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, token } = created.body;

    const bump = await server.client.post(`/app/${id}/api/bump`, { by: 2 }, { token });
    expect(bump.status, JSON.stringify(bump.body)).toBe(200);
    expect(bump.body).toEqual({ ok: true, value: { count: 2 } });
    // An empty body is {}.
    const empty = await server.client.request("POST", `/app/${id}/api/bump`, undefined, { token, headers: { "content-type": "application/json" } });
    expect(empty.body).toEqual({ ok: true, value: { count: 3 } });
    expect((await server.client.post(`/app/${id}/api/read`, {}, { token })).body).toEqual({ ok: true, value: { count: 3 } });

    const who = await server.client.post(`/app/${id}/api/whoami`, {}, { token });
    expect(who.body.value).toEqual({ role: "app", trigger: "http", user: null });

    expectError(await server.client.post(`/app/${id}/api/bump`, { by: "two" }, { token }), 400, "invalid_input");
    expectError(await server.client.post(`/app/${id}/api/bump`, { by: 1, extra: true }, { token }), 400, "unexpected_keys");
    // Only an empty body stands for {}: JSON null, an array or a number is not an object.
    for (const raw of ["null", "[1]", "7"]) expectError(await server.client.post(`/app/${id}/api/bump`, undefined, { token, raw }), 400, "invalid_input");
    expectError(await server.client.post(`/app/${id}/api/nope`, {}, { token }), 404, "unknown_operation");
    expectError(await server.client.post(`/app/${id}/api/bump`, undefined, { token, raw: "{oops" }), 400, "invalid_request");
    expect(expectError(await server.client.post(`/app/${id}/api/fail`, {}, { token }), 422, "operation_failed").message).toContain("nope");
  });

  it("deleting an app removes its stored data and diagnostics", async () => {
    const owner = await createUser(server);
    const created = await server.client.post("/app", { module: COUNTER }, { token: owner.token });
    const id = created.body.id;
    await server.client.post(`/app/${id}/api/bump`, { by: 1 }, { token: owner.token });
    await server.client.post(`/app/${id}/api/nope-not-declared`, {}, { token: owner.token });
    const kvRows = () => server.ctx.db.selectFrom("app_kv").select("key").where("app_id", "=", id).execute();
    expect(await kvRows()).toHaveLength(1);
    expect((await server.client.delete(`/app/${id}`, { token: owner.token })).status).toBe(200);
    expect(await kvRows()).toHaveLength(0);
    expect(await server.ctx.db.selectFrom("app_storage_usage").selectAll().where("app_id", "=", id).execute()).toHaveLength(0);
    expect(server.ctx.diag.list(id)).toEqual([]);
  });

  it("authorizes the app token, the owner after a claim, and no one else", async () => {
    const created = await server.client.post("/app", { module: COUNTER });
    const { id, token } = created.body;
    const other = await server.client.post("/app", { module: COUNTER });
    expectError(await server.client.post(`/app/${id}/api/read`, {}), 401, "unauthorized");
    expectError(await server.client.post(`/app/${id}/api/read`, {}, { token: other.body.token }), 403, "forbidden");

    const owner = await createUser(server);
    const stranger = await createUser(server);
    expectError(await server.client.post(`/app/${id}/api/read`, {}, { token: stranger.token }), 403, "forbidden");
    expect((await server.client.post(`/app/${id}/claim`, { token }, { token: owner.token })).status).toBe(200);

    const who = await server.client.post(`/app/${id}/api/whoami`, {}, { token: owner.token });
    expect(who.body.value).toEqual({ role: "owner", trigger: "http", user: owner.id });
    expectError(await server.client.post(`/app/${id}/api/read`, {}, { token: stranger.token }), 403, "forbidden");
    const revoked = expectError(await server.client.post(`/app/${id}/api/read`, {}, { token }), 401, "unauthorized");
    expect(revoked.reason).toBe("token_revoked_post_claim");
  });

  it("refuses a bad token before saying whether the app exists, though both are read at once", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    const user = await createUser(server);
    const forged = `${user.token.slice(0, -1)}${user.token.endsWith("A") ? "B" : "A"}`;
    expectError(await server.client.post(`/app/${missing}/api/read`, {}, { token: forged }), 401, "unauthorized");
    expectError(await server.client.post(`/app/not-a-uuid/api/read`, {}, { token: forged }), 401, "unauthorized");
    expectError(await server.client.post(`/app/${missing}/api/read`, {}, { token: user.token }), 404, "app_not_found");
  });
});
