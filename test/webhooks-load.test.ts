import { afterAll, beforeAll, expect, it } from "vitest";
import { MINUTE, type ManualClock } from "../src/config/clock.ts";
import { HOOK_PER_ADDRESS, HOOK_PER_WEBHOOK } from "../src/routes/webhooks/deliverWebhook.ts";
import { createOwnedApp } from "./helpers/automation.ts";
import { makeUser } from "./helpers/apps.ts";
import type { ApiResponse } from "./helpers/client.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const TOTAL = 1000;
const STEP_MS = 59; // 1,000 requests × 59 ms: all inside one minute of the manual clock

/** What a token bucket may let through in `elapsedMs`: its capacity plus what refilled. */
const allowed = (capacity: number, elapsedMs: number) => capacity + Math.floor((capacity * elapsedMs) / MINUTE);

describeEachDialect("webhook delivery under load", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  it("1,000 deliveries in a minute from one address across 5 webhooks: limits hold, 429s carry Retry-After, all else is recorded", { timeout: 240_000 }, async () => {
    const clock = server.clock as ManualClock;
    const owner = await makeUser(server);
    // Five webhooks on one app need more than the free plan's three.
    await server.ctx.users.setPlan(owner.handle, "pro");
    const appId = await createOwnedApp(server, owner.token, "load-sink");
    const hooks: { id: string; secret: string }[] = [];
    for (const op of ["whoami", "tick", "slow", "flaky", "count"]) {
      const res = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op }, { token: owner.token });
      expect(res.status).toBe(201);
      hooks.push({ id: res.body.webhook.id, secret: res.body.webhook.secret });
    }
    server.ctx.limiter.reset();
    const start = clock.now();

    type Sent = { hook: number; res: ApiResponse };
    const sent: Sent[] = [];
    for (let i = 0; i < TOTAL; i++) {
      // 200 at the first webhook to drain its own bucket, then the rest round-robin over the others.
      const hook = i < 200 ? 0 : 1 + (i % 4);
      const target = hooks[hook];
      if (target === undefined) throw new Error("missing hook");
      const wrongSecret = i >= 200 && i % 20 === 0;
      const badBody = i >= 200 && i % 25 === 1;
      const viaQuery = i % 2 === 1;
      const secret = wrongSecret ? hooks[(hook + 1) % 5]?.secret ?? "" : target.secret;
      const res = await server.client.post(`/api/v1/hooks/${target.id}${viaQuery ? `?key=${secret}` : ""}`, undefined, {
        raw: badBody ? "[not an object]" : JSON.stringify({ i, ms: 0 }),
        ...(viaQuery ? {} : { token: secret }),
      });
      sent.push({ hook, res });
      clock.advance(STEP_MS);
    }
    const elapsed = clock.now() - start;
    expect(elapsed).toBeLessThan(MINUTE);

    const ok = sent.filter((s) => s.res.status === 200);
    const refused = sent.filter((s) => s.res.status === 429);
    // Which bucket refused shows in RateLimit-Limit: the refusing bucket's capacity.
    const byAddress = refused.filter((s) => s.res.headers.get("ratelimit-limit") === String(HOOK_PER_ADDRESS.capacity));
    const byWebhook = refused.filter((s) => s.res.headers.get("ratelimit-limit") === String(HOOK_PER_WEBHOOK.capacity));
    expect(byAddress.length + byWebhook.length).toBe(refused.length);
    expect(byAddress.length).toBeGreaterThan(0);
    expect(byWebhook.length).toBeGreaterThan(0);

    expect(ok.length).toBeLessThanOrEqual(allowed(HOOK_PER_ADDRESS.capacity, elapsed));
    for (let h = 0; h < 5; h++) expect(ok.filter((s) => s.hook === h).length).toBeLessThanOrEqual(allowed(HOOK_PER_WEBHOOK.capacity, elapsed));
    expect(ok.filter((s) => s.hook === 0).length).toBeGreaterThanOrEqual(HOOK_PER_WEBHOOK.capacity);

    for (const { res } of refused) {
      expect(res.body.error.kind).toBe("rate_limited");
      expect(res.body.error.recovery.kind).toBe("retry");
      const retryAfter = Number(res.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(res.headers.get("ratelimit-reset")).toBe(String(retryAfter));
      expect(res.body.error.recovery.retry_after_sec).toBe(retryAfter);
    }
    // Nothing but the two limits, the wrong secrets and the bad bodies refused anything.
    expect(new Set(sent.map((s) => s.res.status))).toEqual(new Set([200, 400, 401, 429]));
    for (const s of sent.filter((x) => x.res.status === 400)) expect(s.res.body.error.kind).toBe("invalid_request");
    for (let h = 0; h < 5; h++) expect(ok.filter((s) => s.hook === h).length).toBeGreaterThan(0);

    // Every request except the per-address refusals is recorded, with its status (written just
    // after the answers: DeliveryLog).
    await server.ctx.deliveries.settled();
    const rows = await server.ctx.db.selectFrom("webhook_deliveries").select(["webhook_id", "status", "refusal", "request_body", "response_body"]).where("app_id", "=", appId).execute();
    const recordedExpected = sent.filter((s) => !byAddress.includes(s));
    expect(rows.length).toBe(recordedExpected.length);
    for (let h = 0; h < 5; h++) {
      const id = hooks[h]?.id;
      const statuses = (list: number[]) => list.sort((a, b) => a - b);
      expect(statuses(rows.filter((r) => r.webhook_id === id).map((r) => Number(r.status)))).toEqual(
        statuses(recordedExpected.filter((s) => s.hook === h).map((s) => s.res.status)),
      );
    }
    expect(rows.filter((r) => Number(r.status) === 429).every((r) => r.refusal === "rate_limited")).toBe(true);
    const stored = JSON.stringify(rows);
    for (const { secret } of hooks) expect(stored).not.toContain(secret);
    expect(stored).toContain("key=[redacted]");
  });
});
