import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAY, HOUR, MINUTE, type ManualClock } from "../src/config/clock.ts";
import { USER_TOKENS_MAX } from "../src/domain/tokens/tokens.ts";
import { expectError, makeUser } from "./helpers/apps.ts";
import { approve, poll, startPairing } from "./helpers/pairing.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

type Counted = "tokens" | "sessions" | "email_verifications";
const count = async (server: TestServer, table: Counted, userId: string): Promise<number> =>
  Number((await server.ctx.db.selectFrom(table as "tokens").select((eb) => eb.fn.countAll<number>().as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);

/**
 * Rows one account makes by the request: user tokens, sessions, verification links. Each was kept
 * for ever (found by a growth audit: ~150 tokens a second, a session per sign-in, a link per
 * resend). Live user tokens are now capped, and the hourly sweeps take the dead ones.
 */
describe("per-account rows are bounded", () => {
  let server: TestServer;
  let clock: ManualClock;
  beforeAll(async () => {
    server = await startServer({ clock: "manual" });
    clock = server.clock as ManualClock;
  });
  afterAll(async () => server.close());

  it(`user tokens: ${USER_TOKENS_MAX} live at most; expired and revoked ones go a month later`, async () => {
    const user = await makeUser(server);
    const held = await count(server, "tokens", user.id);
    const minted: string[] = [];
    for (let i = held; i < USER_TOKENS_MAX; i++) {
      const res = await server.client.post("/api/token", { name: `t${i}`, expires_in_days: 1 }, { token: user.token });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      minted.push(res.body.id as string);
    }
    expectError(await server.client.post("/api/token", { name: "one too many" }, { token: user.token }), 429, "too_many_requests");
    // A paired agent's token counts with them: its poll is refused until one is revoked, and the
    // pairing stays approved for the poll after.
    const paired = await startPairing(server, "agent past the cap");
    expect((await approve(server, { ...user, id: user.id } as never, paired.user_code)).status).toBe(200);
    expectError(await poll(server, paired.device_code), 429, "too_many_requests");
    // A revoked one makes room.
    expect((await server.client.delete(`/api/token/${minted[0]}`, { token: user.token })).status).toBe(200);
    expect((await server.client.post("/api/token", { name: "room again", expires_in_days: 7 }, { token: user.token })).status).toBe(201);
    expect(await count(server, "tokens", user.id)).toBe(USER_TOKENS_MAX + 1);
    expect((await server.client.delete(`/api/token/${minted[1]}`, { token: user.token })).status).toBe(200);
    expect((await poll(server, paired.device_code)).body).toMatchObject({ status: "approved", token: expect.stringMatching(/^svc_user_/) });
    expect(await count(server, "tokens", user.id)).toBe(USER_TOKENS_MAX + 2);
    const listed = (await server.client.get("/api/token", { token: user.token })).body.tokens as { id: string; name: string }[];
    const agent = listed.find((t) => t.name === "agent past the cap");
    expect((await server.client.delete(`/api/token/${agent?.id}`, { token: user.token })).status).toBe(200);
    // A month past the one-day tokens' end (and the revocation) they are gone; the two 7-day ones
    // (the fixture's and the last) are within their month, until a week later.
    clock.advance(31 * DAY + 2 * DAY);
    await server.ctx.scheduler.tick();
    expect(await count(server, "tokens", user.id)).toBe(held + 1);
    clock.advance(7 * DAY);
    await server.ctx.scheduler.tick();
    expect(await count(server, "tokens", user.id)).toBe(0);
  });

  it("sessions: one a sign-in, gone after their 30 days", async () => {
    const handle = `sess${Date.now().toString(36)}`;
    const signup = await server.client.post("/api/auth/signup", { email: `${handle}@example.test`, handle, password: "correct horse battery staple" }, { headers: { origin: server.config.baseUrl } });
    expect(signup.status, JSON.stringify(signup.body)).toBe(201);
    const userId = signup.body.user.id as string;
    for (let i = 0; i < 20; i++) {
      // The sign-in buckets (10 a minute) refill.
      if (i % 10 === 0) clock.advance(MINUTE + 1);
      expect((await server.client.post("/api/auth/login", { login: handle, password: "correct horse battery staple" })).status).toBe(200);
    }
    expect(await count(server, "sessions", userId)).toBe(21);
    clock.advance(29 * DAY);
    await server.ctx.scheduler.tick();
    expect(await count(server, "sessions", userId)).toBe(21);
    clock.advance(2 * DAY);
    await server.ctx.scheduler.tick();
    expect(await count(server, "sessions", userId)).toBe(0);
  });

  it("verification links: one a resend, gone a day after their 48 hours", async () => {
    const user = await makeUser(server);
    const before = await count(server, "email_verifications", user.id);
    for (let i = 0; i < 6; i++) {
      if (i % 3 === 0) clock.advance(HOUR + 1);
      expect((await server.client.post("/api/auth/verify-email/resend", {}, { token: user.token })).status).toBe(200);
    }
    // Three an hour, not a minute: each is a mail to an inbox that may not be the signer's.
    clock.advance(MINUTE + 1);
    expectError(await server.client.post("/api/auth/verify-email/resend", {}, { token: user.token }), 429, "rate_limited");
    expect(await count(server, "email_verifications", user.id)).toBe(before + 6);
    clock.advance(3 * DAY + MINUTE);
    await server.ctx.scheduler.tick();
    expect(await count(server, "email_verifications", user.id)).toBe(0);
  });
});
