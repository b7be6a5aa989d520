import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { EventReader } from "../helpers/sse.ts";

const MODULE = `export const manifest = { id: "lure", routes: { hi: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "hi" }); } };`;

/** Issue 45, attacked: what a suspended app or account still holds open, and report spam. */
describeEachDialect("hostile: suspension and reports", (dialect) => {
  let server: TestServer;
  let operator: FixtureUser;

  beforeAll(async () => {
    server = await startServer({ dialect, env: { TRUST_PROXY: "127.0.0.1" } });
    operator = await makeUser(server);
    await server.ctx.users.setRole(operator.handle, "operator");
  });
  afterAll(async () => server.close());

  const suspend = (path: string) => server.client.post(`/api/v1/admin/${path}/suspend`, { reason: "abuse" }, { token: operator.token });

  it("a suspended app's open event streams end at once, and a new one is refused", async () => {
    const created = await server.client.post("/app", { module: MODULE });
    const id = created.body.id as string;
    const render = (await server.ctx.renderTokens.mintQuery(id, null)).token;
    const streams = await Promise.all([0, 1, 2].map(() => EventReader.open(`${server.url}/app/${id}/events?t=${render}`)));
    try {
      for (const s of streams) await s.next((e) => e.event === "hello");
      expect((await suspend(`apps/${id}`)).status).toBe(200);
      for (const s of streams) {
        const last = await s.next((e) => e.event === "error");
        expect(last.data).toMatchObject({ ok: false, error: { kind: "forbidden", message: "suspended by the operator" } });
        // The stream is over: nothing more comes, and the reader sees its end.
        await expect(s.next((e) => e.event === "never")).rejects.toThrow("the event stream ended");
      }
      expectError(await server.client.get(`/app/${id}/events?t=${render}`), 403, "forbidden");
      expect(server.ctx.live.listenerCount(id)).toBe(0);
    } finally {
      await Promise.all(streams.map((s) => s.close()));
    }
  });

  it("a suspended person's pairing: a new approval is refused, and one approved before the suspension delivers no token", async () => {
    const person = await makeUser(server);
    const early = (await server.client.post("/api/pair/start", { label: "agent before" })).body;
    expect((await server.client.post("/api/pair/approve", { user_code: early.user_code }, { token: person.token })).status).toBe(200);
    expect((await suspend(`users/${person.handle}`)).status).toBe(200);
    expectError(await server.client.post("/api/pair/poll", { device_code: early.device_code }), 401, "unauthorized");
    const late = (await server.client.post("/api/pair/start", { label: "agent after" })).body;
    expectError(await server.client.post("/api/pair/approve", { user_code: late.user_code }, { token: person.token }), 401, "unauthorized");
    expectError(await server.client.post("/api/pair/approve", { user_code: late.user_code }, { cookie: person.cookie, headers: { origin: new URL(server.config.baseUrl).origin } }), 401, "unauthorized");
    // Its tokens, the one minted before included, and a token minted for it since: all refused.
    const minted = await server.ctx.tokens.mintUserToken(person.id, { name: "after" });
    for (const token of [person.token, minted.token]) expectError(await server.client.get("/api/token", { token }), 401, "unauthorized");
    // Lifted: the approval made before delivers, once.
    expect((await server.client.post(`/api/v1/admin/users/${person.handle}/unsuspend`, {}, { token: operator.token })).status).toBe(200);
    const delivered = await server.client.post("/api/pair/poll", { device_code: early.device_code });
    expect(delivered.body.status).toBe("approved");
  });

  it("report spam: 50 at once from one address keep exactly 5; the rest are refused 429 and kept nowhere", async () => {
    const created = await server.client.post("/app", { module: MODULE });
    const id = created.body.id as string;
    const origin = new URL(server.config.baseUrl).origin;
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        server.client.request("POST", `/app/${id}/report`, undefined, {
          raw: new URLSearchParams({ reason: "spam", details: `flood ${i}` }).toString(),
          headers: { origin, "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "192.0.2.66" },
        }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(5);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(45);
    expect(await server.ctx.abuseReports.list(100, id)).toHaveLength(5);
    // Another address is not held back by the flood.
    const other = await server.client.request("POST", `/app/${id}/report`, undefined, {
      raw: "reason=phishing",
      headers: { origin, "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "192.0.2.67" },
    });
    expect(other.status).toBe(201);
  });
});
