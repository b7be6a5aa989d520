import { beforeAll, beforeEach, afterAll, expect, it } from "vitest";
import { MINUTE, SECOND, DAY } from "../src/config/clock.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { approve, manualClock, poll, startPairing } from "./helpers/pairing.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("device pairing: start, poll, approve", (dialect) => {
  let server: TestServer;
  let alice: TestUser;
  let bob: TestUser;
  const wait = (ms: number) => manualClock(server).advance(ms);

  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    alice = await createUser(server);
    bob = await createUser(server);
  });
  afterAll(async () => server.close());
  beforeEach(() => server.ctx.limiter.reset());

  it("starts with codes in the spec's shapes", async () => {
    const started = await startPairing(server, "Claude Code on laptop");
    expect(started).toMatchObject({
      ok: true,
      verification_url: `${server.config.baseUrl}/pair`,
      verification_url_complete: `${server.config.baseUrl}/pair?code=${started.user_code}`,
      polling_interval: 5,
      expires_in: 600,
    });
    expect(started.user_code).toMatch(/^SVC-[A-Z2-9]{6}$/);
    expect(started.device_code).toMatch(/^[0-9A-Za-z]{43}$/);
    const stored = await server.ctx.db.selectFrom("pairings").selectAll().where("user_code", "=", started.user_code).executeTakeFirstOrThrow();
    expect(stored.device_code_hash).not.toContain(started.device_code);
    expect(stored.label).toBe("Claude Code on laptop");

    const codes = new Set<string>();
    for (let i = 0; i < 20; i++) codes.add((await startPairing(server)).user_code);
    expect(codes.size).toBe(20);
  });

  it("refuses a label over 80 characters and unknown fields with 400 invalid_request", async () => {
    expect((await server.client.post("/api/pair/start", { label: "x".repeat(80) })).status).toBe(200);
    expect((await server.client.post("/api/pair/start", { label: "🧱".repeat(80) })).status).toBe(200);
    for (const body of [{ label: "x".repeat(81) }, { label: 5 }, { label: "ok", scope: "all" }]) {
      const res = await server.client.post("/api/pair/start", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.kind).toBe("invalid_request");
    }
    const noBody = await server.client.post("/api/pair/start");
    expect(noBody.status).toBe(200);
  });

  it("pending → approved with a one-time 30-day paired token → consumed", async () => {
    const started = await startPairing(server, "my agent");
    wait(5 * SECOND);
    expect((await poll(server, started.device_code)).body).toEqual({ ok: true, status: "pending" });

    // Lower case, spaces, a missing dash: the same code.
    const typed = started.user_code.toLowerCase().replace("-", " ");
    const approved = await approve(server, alice, typed);
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toEqual({ ok: true, status: "approved" });

    const got = await poll(server, started.device_code);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ ok: true, status: "approved" });
    expect(got.body.token).toMatch(/^svc_user_/);
    expect(Date.parse(got.body.expiresAt)).toBe(server.clock.now() + 30 * DAY);

    const me = await server.client.get("/api/me", { token: got.body.token });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(alice.id);
    const listed = await server.client.get("/api/token", { token: alice.token });
    const paired = listed.body.tokens.filter((t: { source: string }) => t.source === "paired");
    expect(paired).toContainEqual(expect.objectContaining({ name: "my agent", source: "paired" }));

    const again = await poll(server, started.device_code);
    expect(again.body).toEqual({ ok: true, status: "consumed" });
    const reapprove = await approve(server, alice, started.user_code);
    expect(reapprove.status).toBe(409);
    expect(reapprove.body.error.kind).toBe("already_approved");
  });

  it("approves by session cookie, which needs our Origin", async () => {
    const started = await startPairing(server);
    const crossSite = await server.client.post("/api/pair/approve", { user_code: started.user_code }, { cookie: bob.cookie, headers: { origin: "https://evil.example" } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.error.kind).toBe("forbidden");
    const ok = await server.client.post("/api/pair/approve", { user_code: started.user_code }, { cookie: bob.cookie, headers: { origin: server.config.baseUrl } });
    expect(ok.body).toEqual({ ok: true, status: "approved" });
    const got = await poll(server, started.device_code);
    expect((await server.client.get("/api/me", { token: got.body.token })).body.user.id).toBe(bob.id);
  });

  it("answers slow_down to early polls and grows the interval by 5 s for good", async () => {
    const { device_code } = await startPairing(server);
    expect((await poll(server, device_code)).body).toEqual({ ok: true, status: "slow_down", polling_interval: 10 });
    wait(5 * SECOND);
    expect((await poll(server, device_code)).body).toEqual({ ok: true, status: "slow_down", polling_interval: 15 });
    wait(15 * SECOND);
    expect((await poll(server, device_code)).body.status).toBe("pending");
    wait(14 * SECOND);
    expect((await poll(server, device_code)).body).toEqual({ ok: true, status: "slow_down", polling_interval: 20 });
    wait(20 * SECOND);
    expect((await poll(server, device_code)).body.status).toBe("pending");
    wait(20 * SECOND);
    expect((await poll(server, device_code)).body.status).toBe("pending");
  });

  it("expires at 10 minutes without polling", async () => {
    const late = await startPairing(server);
    const inTime = await startPairing(server);
    wait(10 * MINUTE - 1);
    expect((await approve(server, alice, inTime.user_code)).body.status).toBe("approved");
    wait(1);
    expect((await poll(server, late.device_code)).body).toEqual({ ok: true, status: "expired" });
    const refused = await approve(server, alice, late.user_code);
    expect(refused.status).toBe(410);
    expect(refused.body.error.kind).toBe("expired");
    // An approval given in time is still delivered after the sliding expiry passed.
    expect((await poll(server, inTime.device_code)).body.status).toBe("approved");
  });

  it("slides the expiry while polled, up to 60 minutes from start", async () => {
    const { device_code, user_code } = await startPairing(server);
    for (let elapsed = 5; elapsed <= 55; elapsed += 5) {
      wait(5 * MINUTE);
      expect((await poll(server, device_code)).body.status, `at ${elapsed} min`).toBe("pending");
    }
    wait(5 * MINUTE - SECOND);
    expect((await poll(server, device_code)).body.status).toBe("pending");
    wait(SECOND);
    expect((await poll(server, device_code)).body.status).toBe("expired");
    const refused = await approve(server, alice, user_code);
    expect(refused.status).toBe(410);
    expect(refused.body.error.kind).toBe("expired");
  });

  it("denies: the poll says denied and the code cannot be approved afterwards", async () => {
    const { device_code, user_code } = await startPairing(server);
    expect((await approve(server, alice, user_code, "deny")).body).toEqual({ ok: true, status: "denied" });
    expect((await poll(server, device_code)).body).toEqual({ ok: true, status: "denied" });
    const late = await approve(server, bob, user_code);
    expect(late.status).toBe(410);
    expect(late.body.error.kind).toBe("expired");
  });

  it("409 already_approved for a second decision, also by another user", async () => {
    const { user_code } = await startPairing(server);
    expect((await approve(server, alice, user_code)).status).toBe(200);
    for (const [user, decision] of [[alice, "approve"], [bob, "deny"]] as const) {
      const res = await approve(server, user, user_code, decision);
      expect(res.status).toBe(409);
      expect(res.body.error.kind).toBe("already_approved");
    }
  });

  it("404 not_found for unknown codes and device codes; 400 and 401 for bad requests", async () => {
    const unknown = await approve(server, bob, "SVC-ZZZZZZ");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.kind).toBe("not_found");
    const garbage = await approve(server, bob, "hello");
    expect(garbage.status).toBe(404);
    expect(garbage.body.error.kind).toBe("not_found");
    const noDevice = await poll(server, "x".repeat(43));
    expect(noDevice.status).toBe(404);
    expect(noDevice.body.error.kind).toBe("not_found");

    for (const body of [{}, { user_code: "SVC-ABCDEF", decision: "maybe" }, { user_code: "SVC-ABCDEF", extra: 1 }]) {
      const res = await server.client.post("/api/pair/approve", body, { token: bob.token });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.kind).toBe("invalid_request");
    }
    for (const body of [{}, { device_code: "" }, { device_code: 7 }]) {
      const res = await server.client.post("/api/pair/poll", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.kind).toBe("invalid_request");
    }
    const anonymous = await server.client.post("/api/pair/approve", { user_code: "SVC-ABCDEF" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.kind).toBe("sign_in_required");
  });

  it("delivers the token to exactly one of several concurrent polls", async () => {
    const { device_code, user_code } = await startPairing(server, "racer");
    expect((await approve(server, alice, user_code)).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 8 }, () => poll(server, device_code)));
    const statuses = results.map((r) => r.body.status).sort();
    expect(statuses).toEqual(["approved", ...Array<string>(7).fill("consumed")]);
    const listed = await server.client.get("/api/token", { token: alice.token });
    expect(listed.body.tokens.filter((t: { name: string }) => t.name === "racer")).toHaveLength(1);
  });
});
