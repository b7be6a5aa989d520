import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { MINUTE, SECOND } from "../src/config/clock.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { approve, expectRateLimitHeaders, manualClock, poll, startPairing } from "./helpers/pairing.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("device pairing: lock-out, rate limits, legacy path", (dialect) => {
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

  it("locks a user's approvals for 10 minutes after 5 wrong codes, even for a right code", async () => {
    const user = await createUser(server);
    const target = await startPairing(server, "target");
    for (let i = 0; i < 5; i++) {
      const wrong = await approve(server, user, `SVC-WRONG${i + 2}`);
      expect(wrong.status).toBe(404);
      expect(wrong.body.error.kind).toBe("not_found");
    }
    const locked = await approve(server, user, target.user_code);
    expect(locked.status).toBe(429);
    expect(locked.body.error.kind).toBe("rate_limited");
    expect(locked.headers.get("retry-after")).toBe("600");
    expect(locked.headers.get("ratelimit-limit")).toBe("5");
    expect(locked.body.error.recovery.retry_after_url).toBe(`${server.config.baseUrl}/api/pair/approve`);
    expectRateLimitHeaders(locked, 5);

    // The lock is the user's alone: another person approves the same code meanwhile.
    expect((await approve(server, alice, target.user_code)).body.status).toBe("approved");

    wait(10 * MINUTE - SECOND);
    const stillLocked = await approve(server, user, "SVC-AAAAAA");
    expect(stillLocked.status).toBe(429);
    expect(stillLocked.headers.get("retry-after")).toBe("1");
    wait(SECOND);
    const fresh = await startPairing(server);
    expect((await approve(server, user, fresh.user_code)).body).toEqual({ ok: true, status: "approved" });
  });

  it("a burst of guesses sent at once is looked up 5 at most: the rest, the right code after them too, meet the lock", async () => {
    const guesser = await createUser(server);
    const target = await startPairing(server, "someone else's agent");
    // 19 wrong codes and the right one, all in flight together (20 is the approve bucket's minute).
    const codes = [...Array.from({ length: 19 }, (_, i) => `SVC-WRNG${String.fromCharCode(65 + (i % 26))}${(i % 8) + 2}`), target.user_code];
    const answers = await Promise.all(codes.map((code) => approve(server, guesser, code)));
    const looked = answers.filter((res) => res.status === 404).length;
    expect(looked).toBeLessThanOrEqual(5);
    expect(answers.filter((res) => res.status === 429).length).toBeGreaterThanOrEqual(codes.length - 6);
    // Whatever the order they arrived in, no more than 5 codes were tried: the right one among
    // them at most by luck of 5 in 20. It is never approved after five wrong ones were counted.
    const approved = answers.at(-1)?.body.status === "approved";
    if (approved) expect(looked).toBeLessThan(5);
  });

  it("counts wrong codes in a 10-minute window", async () => {
    const user = await createUser(server);
    for (let i = 0; i < 4; i++) expect((await approve(server, user, "SVC-NOPE22")).status).toBe(404);
    wait(10 * MINUTE);
    // The window restarted: four more wrong codes are not a lock-out.
    for (let i = 0; i < 4; i++) expect((await approve(server, user, "SVC-NOPE22")).status).toBe(404);
    const fresh = await startPairing(server);
    expect((await approve(server, user, fresh.user_code)).status).toBe(200);
  });

  it("rate-limits /api/pair/start at 30 a minute per address, with the spec's headers", async () => {
    for (let i = 1; i <= 30; i++) {
      const res = await server.client.post("/api/pair/start", {});
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-remaining")).toBe(String(30 - i));
      expectRateLimitHeaders(res, 30);
    }
    const refused = await server.client.post("/api/pair/start", {});
    expect(refused.status).toBe(429);
    expectRateLimitHeaders(refused, 30);
    expect(refused.headers.get("retry-after")).toBe("2");
    wait(2 * SECOND);
    expect((await server.client.post("/api/pair/start", {})).status).toBe(200);
  });

  it("rate-limits /api/pair/poll at 60 a minute per address", async () => {
    const { device_code } = await startPairing(server);
    for (let i = 1; i <= 60; i++) {
      const res = await poll(server, device_code);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-remaining")).toBe(String(60 - i));
      expectRateLimitHeaders(res, 60);
    }
    const refused = await poll(server, device_code);
    expect(refused.status).toBe(429);
    expectRateLimitHeaders(refused, 60);
    expect(refused.headers.get("retry-after")).toBe("1");
  });

  it("rate-limits /api/pair/approve at 20 a minute per user, not per address", async () => {
    // Decided codes answer 409 without counting as wrong guesses, so only the bucket refuses.
    const { user_code } = await startPairing(server);
    expect((await approve(server, alice, user_code)).status).toBe(200);
    for (let i = 2; i <= 20; i++) {
      const res = await approve(server, alice, user_code);
      expect(res.status).toBe(409);
      expect(res.headers.get("ratelimit-remaining")).toBe(String(20 - i));
      expectRateLimitHeaders(res, 20);
    }
    const refused = await approve(server, alice, user_code);
    expect(refused.status).toBe(429);
    expectRateLimitHeaders(refused, 20);
    expect(refused.headers.get("retry-after")).toBe("3");
    // Bob, from the same address, has his own bucket.
    const other = await approve(server, bob, user_code);
    expect(other.status).toBe(409);
    expect(other.headers.get("ratelimit-remaining")).toBe("19");
  });

  it("answers POST /pair/start with 308 to /api/pair/start, keeping method and body", async () => {
    const moved = await server.client.post("/pair/start", { label: "legacy agent" });
    expect(moved.status).toBe(308);
    expect(moved.headers.get("location")).toBe(`${server.config.baseUrl}/api/pair/start`);

    const followed = await fetch(`${server.url}/pair/start`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ label: "legacy agent" }),
      redirect: "follow",
    });
    expect(followed.status).toBe(200);
    const body = (await followed.json()) as { user_code: string };
    const row = await server.ctx.db.selectFrom("pairings").select("label").where("user_code", "=", body.user_code).executeTakeFirstOrThrow();
    expect(row.label).toBe("legacy agent");
  });

  it("brute force: 200 wrong codes from one account and one address approve nothing", async () => {
    const attacker = await createUser(server);
    const live = await Promise.all(Array.from({ length: 5 }, () => startPairing(server)));
    const liveCodes = new Set(live.map((p) => p.user_code));
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ23456789";
    const statuses: Record<number, number> = {};
    for (let i = 0; i < 200; i++) {
      let guess: string;
      do {
        guess = "SVC-" + Array.from({ length: 6 }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join("");
      } while (liveCodes.has(guess));
      const res = await approve(server, attacker, guess);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      expect([404, 429]).toContain(res.status);
      if (res.status === 429) expectRateLimitHeaders(res, Number(res.headers.get("ratelimit-limit")));
      else expect(res.body.error.kind).toBe("not_found");
      // Three seconds apart: the 20-a-minute bucket never empties, so the lock-out alone refuses.
      wait(3 * SECOND);
      // The agents keep polling, so their codes stay live for the whole 10-minute attack.
      if (i % 50 === 49) for (const pairing of live) expect((await poll(server, pairing.device_code)).body.status).toBe("pending");
    }
    expect(statuses).toEqual({ 404: 5, 429: 195 });
    const approved = await server.ctx.db.selectFrom("pairings").select("status").where("user_id", "=", attacker.id).execute();
    expect(approved).toHaveLength(0);
    wait(5 * SECOND);
    for (const pairing of live) expect((await poll(server, pairing.device_code)).body.status).toBe("pending");
  });

  it("brute force in a burst is refused by the lock-out, then by the per-user bucket", async () => {
    const attacker = await createUser(server);
    const seen = { notFound: 0, locked: 0, bucket: 0 };
    for (let i = 0; i < 200; i++) {
      const res = await approve(server, attacker, `SVC-${String(i).padStart(6, "A").replace(/[01]/g, "B")}`);
      if (res.status === 404) seen.notFound++;
      else {
        expect(res.status).toBe(429);
        expectRateLimitHeaders(res, Number(res.headers.get("ratelimit-limit")));
        if (res.headers.get("ratelimit-limit") === "5") seen.locked++;
        else seen.bucket++;
      }
    }
    expect(seen).toEqual({ notFound: 5, locked: 15, bucket: 180 });
  });
});

describeEachDialect("device pairing: grants bound to an app", (dialect) => {
  let server: TestServer;
  let alice: TestUser;
  const appId = "6f1c1f0e-8d4b-4a8e-9a57-1f3c2b7d9e10";
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    alice = await createUser(server);
  });
  afterAll(async () => server.close());

  it("startBound returns the spec's pairing object; approveBoundToApp makes the next poll yield the claimer's token", async () => {
    const grant = await server.ctx.pairings.startBound(appId, "built my todo app");
    expect(Object.keys(grant).sort()).toEqual(["device_code", "expires_in", "polling_interval", "user_code", "verification_url"]);
    expect(grant).toMatchObject({ verification_url: `${server.config.baseUrl}/pair`, polling_interval: 5, expires_in: 600 });
    expect(grant.user_code).toMatch(/^SVC-[A-Z2-9]{6}$/);

    manualClock(server).advance(5 * SECOND);
    expect((await poll(server, grant.device_code)).body.status).toBe("pending");
    expect(await server.ctx.pairings.approveBoundToApp(appId, alice.id)).toBe(1);
    const got = await poll(server, grant.device_code);
    expect(got.body.status).toBe("approved");
    expect((await server.client.get("/api/me", { token: got.body.token })).body.user.id).toBe(alice.id);
    expect((await poll(server, grant.device_code)).body.status).toBe("consumed");
    // A second claim finds nothing left to approve.
    expect(await server.ctx.pairings.approveBoundToApp(appId, alice.id)).toBe(0);
  });

  it("does not approve an expired bound grant, and refuses a label over 80 characters", async () => {
    const otherApp = "0b7d2c4e-1a2b-4c3d-8e9f-a0b1c2d3e4f5";
    const grant = await server.ctx.pairings.startBound(otherApp, null);
    manualClock(server).advance(10 * MINUTE);
    expect(await server.ctx.pairings.approveBoundToApp(otherApp, alice.id)).toBe(0);
    expect((await poll(server, grant.device_code)).body.status).toBe("expired");
    await expect(server.ctx.pairings.startBound(otherApp, "x".repeat(81))).rejects.toMatchObject({ kind: "invalid_request", status: 400 });
  });

  it("works inside the caller's transaction, and a rolled-back create leaves no grant", async () => {
    const appInTx = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
    const grant = await server.ctx.db.transaction().execute((trx) => server.ctx.pairings.startBound(appInTx, "in a transaction", trx));
    const approved = await server.ctx.db.transaction().execute((trx) => server.ctx.pairings.approveBoundToApp(appInTx, alice.id, trx));
    expect(approved).toBe(1);
    expect((await poll(server, grant.device_code)).body.status).toBe("approved");

    const rolledBack = "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b";
    let code = "";
    await expect(
      server.ctx.db.transaction().execute(async (trx) => {
        code = (await server.ctx.pairings.startBound(rolledBack, null, trx)).device_code;
        throw new Error("the app insert failed");
      }),
    ).rejects.toThrow("the app insert failed");
    const gone = await poll(server, code);
    expect(gone.status).toBe(404);
    expect(gone.body.error.kind).toBe("not_found");
  });
});
