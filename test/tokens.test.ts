import { PassThrough } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY } from "../src/config/clock.ts";
import type { ManualClock } from "../src/config/clock.ts";
import { mintToken } from "../src/domain/tokens/format.ts";
import { createUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("user tokens", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  it("mints a token shown once, lists it without plaintext, and records lastUsedAt", async () => {
    const user = await createUser(server);
    const minted = await server.client.post("/api/token", { name: "laptop", expires_in_days: 3 }, { token: user.token });
    expect(minted.status).toBe(201);
    expect(minted.body).toMatchObject({ ok: true, name: "laptop" });
    expect(minted.body.token).toMatch(/^svc_user_[0-9A-Za-z]{49}$/);
    expect(Date.parse(minted.body.expiresAt) - Date.parse(minted.body.createdAt)).toBe(3 * DAY);

    await server.client.get("/api/me", { token: minted.body.token });
    const list = await server.client.get("/api/token", { token: user.token });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(minted.body.token);
    expect(list.text).not.toContain(user.token);
    const row = list.body.tokens.find((t: { id: string }) => t.id === minted.body.id);
    expect(row).toMatchObject({ name: "laptop", source: "minted" });
    expect(minted.body.token.startsWith(row.prefix)).toBe(true);
    expect(row.lastUsedAt).not.toBeNull();
  });

  it("revokes at once: the next request is 401 token_revoked", async () => {
    const user = await createUser(server);
    const minted = await server.client.post("/api/token", {}, { token: user.token });
    expect((await server.client.get("/api/me", { token: minted.body.token })).status).toBe(200);
    const revoke = await server.client.delete(`/api/token/${minted.body.id}`, { token: user.token });
    expect(revoke.status).toBe(200);
    const after = await server.client.get("/api/me", { token: minted.body.token });
    expect(after.status).toBe(401);
    expect(after.body.error).toMatchObject({ kind: "unauthorized", reason: "token_revoked" });
    const again = await server.client.delete(`/api/token/${minted.body.id}`, { token: user.token });
    expect(again.status).toBe(404);
    expect(again.body.error.kind).toBe("not_found");
  });

  it("cannot revoke another user's token", async () => {
    const alice = await createUser(server);
    const bob = await createUser(server);
    const minted = await server.client.post("/api/token", {}, { token: alice.token });
    const res = await server.client.delete(`/api/token/${minted.body.id}`, { token: bob.token });
    expect(res.status).toBe(404);
    expect((await server.client.get("/api/me", { token: minted.body.token })).status).toBe(200);
  });

  it("walks the 401 ladder: malformed, unknown, expired, wrong scheme", async () => {
    const cases: [string, string, string | undefined][] = [
      ["Bearer svc_user_short", "unauthorized", "token_malformed"],
      // Right shape, one character of the checksum changed.
      [`Bearer ${flipLast(mintToken("user").plaintext)}`, "unauthorized", "token_malformed"],
      ["Bearer " + mintToken("user").plaintext, "unauthorized", "token_unknown"],
      ["Basic dXNlcjpwYXNz", "unauthorized", "token_malformed"],
    ];
    for (const [authorization, kind, reason] of cases) {
      const res = await server.client.get("/api/me", { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
      expect(res.body.error.kind).toBe(kind);
      expect(res.body.error.reason).toBe(reason);
    }

    const user = await createUser(server);
    const shortLived = await server.client.post("/api/token", { expires_in_days: 1 }, { token: user.token });
    (server.clock as ManualClock).advance(DAY + 1);
    const expired = await server.client.get("/api/me", { token: shortLived.body.token });
    expect(expired.status).toBe(401);
    expect(expired.body.error.kind).toBe("token_expired");
  });

  it("mints with no body at all", async () => {
    const user = await createUser(server);
    const res = await server.client.request("POST", "/api/token", undefined, { token: user.token });
    expect(res.status).toBe(201);
    expect(res.body.name).toBeNull();
  });

  it("refuses out-of-range expiry and unknown fields", async () => {
    const user = await createUser(server);
    for (const body of [{ expires_in_days: 8 }, { expires_in_days: 0 }, { expires_in_days: "3" }, { scope: "all" }]) {
      const res = await server.client.post("/api/token", body, { token: user.token });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.kind).toBe("invalid_request");
    }
  });

  it("applies the Origin rule to cookie-authenticated mutations only", async () => {
    const user = await createUser(server);
    const noOrigin = await server.client.post("/api/token", {}, { cookie: user.cookie });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error.kind).toBe("forbidden");
    const evil = await server.client.post("/api/token", {}, { cookie: user.cookie, headers: { origin: "https://evil.example" } });
    expect(evil.status).toBe(403);
    expect(evil.body.error.kind).toBe("forbidden");
    const same = await server.client.post("/api/token", {}, { cookie: user.cookie, headers: { origin: server.config.baseUrl } });
    expect(same.status).toBe(201);
    // Reads need no Origin, and bearer tokens are not subject to it.
    expect((await server.client.get("/api/token", { cookie: user.cookie })).status).toBe(200);
    expect((await server.client.post("/api/token", {}, { token: user.token })).status).toBe(201);
  });

  it("expires an idle session after 7 days", async () => {
    const user = await createUser(server);
    (server.clock as ManualClock).advance(7 * DAY + 1);
    const res = await server.client.get("/api/me", { cookie: user.cookie });
    expect(res.status).toBe(401);
    expect(res.body.error.kind).toBe("sign_in_required");
  });

  // An anonymous create whose build never published issued its token for an app that never was.
  it("the sweep removes expired app tokens whose app was never made, and keeps a live app's", async () => {
    const { tokens, db } = server.ctx;
    const clock = server.clock as ManualClock;
    const live = (await server.client.post("/app", { module: `export const manifest = { id: "token-keeper", routes: { hi: {} } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };` })).body.id as string;
    const never = "00000000-0000-4000-8000-0000000000aa";
    await tokens.issue("app", { appId: never, ttlMs: 7 * DAY });
    const appTokens = async (appId: string) => (await db.selectFrom("tokens").select("id").where("kind", "=", "app").where("app_id", "=", appId).execute()).length;
    expect(await tokens.sweep()).toBe(0);
    clock.advance(8 * DAY + 1);
    expect(await tokens.sweep()).toBe(1);
    expect(await appTokens(never)).toBe(0);
    expect(await appTokens(live)).toBe(1);
  });
});

it("refuses a malformed token without touching the database", async () => {
  // The 500 below is logged as an unexpected error; keep it out of the test output.
  const server = await startServer({ logStream: new PassThrough() });
  try {
    const user = await createUser(server);
    // With the store closed, any lookup would fail with a 500; a malformed token must not get that far.
    await server.ctx.store.close();
    const malformed = await server.client.get("/api/me", { headers: { authorization: `Bearer ${flipLast(user.token)}` } });
    expect(malformed.status).toBe(401);
    expect(malformed.body.error.reason).toBe("token_malformed");
    const wellFormed = await server.client.get("/api/me", { token: user.token });
    expect(wellFormed.status).toBe(500);
  } finally {
    await server.http.close().catch(() => undefined);
  }
});

function flipLast(token: string): string {
  const last = token.slice(-1);
  return token.slice(0, -1) + (last === "A" ? "B" : "A");
}
