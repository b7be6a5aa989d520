import { describe, expect, it } from "vitest";
import { ManualClock, SECOND } from "../src/config/clock.ts";
import { RateLimiter, type BucketRule } from "../src/http/rate-limit/index.ts";
import { createUser } from "./helpers/accounts.ts";
import { startServer } from "./helpers/server.ts";

const FIVE: BucketRule = { name: "five", capacity: 5 };
const SIXTY: BucketRule = { name: "sixty", capacity: 60 };

describe("token buckets", () => {
  it("counts down, refuses at empty, and refills one token per window/capacity", () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock);
    const check = [{ rule: FIVE, key: "ip" }];
    const remaining = [];
    for (let i = 0; i < 5; i++) {
      const d = limiter.take(check);
      expect(d.allowed).toBe(true);
      remaining.push(d.remaining);
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    const refused = limiter.take(check);
    // 5 per 60 s is one token every 12 s.
    expect(refused).toMatchObject({ allowed: false, limit: 5, remaining: 0, resetSec: 12, rung: "throttled" });
    clock.advance(12 * SECOND);
    expect(limiter.take(check)).toMatchObject({ allowed: true, remaining: 0, resetSec: 12 });
  });

  it("a clock that steps back refills nothing, and drains nothing either", () => {
    const clock = new ManualClock(10 * 3_600_000);
    const limiter = new RateLimiter(clock);
    const check = [{ rule: FIVE, key: "ip" }];
    expect(limiter.take(check)).toMatchObject({ allowed: true, remaining: 4 });
    clock.set(clock.now() - 3_600_000);
    expect(limiter.take(check)).toMatchObject({ allowed: true, remaining: 3 });
  });

  it("reports the bucket with the fewest whole tokens and takes from every bucket only when all have one", () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock);
    const both = [
      { rule: FIVE, key: "a" },
      { rule: SIXTY, key: "app" },
    ];
    expect(limiter.take(both)).toMatchObject({ limit: 5, remaining: 4 });
    for (let i = 0; i < 4; i++) limiter.take(both);
    const refused = limiter.take(both);
    expect(refused).toMatchObject({ allowed: false, limit: 5 });
    // The refused request took nothing from the app-wide bucket: 60 - 5 = 55 left.
    expect(limiter.take([{ rule: SIXTY, key: "app" }]).remaining).toBe(54);
    // Another address is unaffected by the first one's bucket.
    expect(limiter.take([{ rule: FIVE, key: "b" }, { rule: SIXTY, key: "app" }])).toMatchObject({ allowed: true, limit: 5, remaining: 4 });
  });

  it("makes no bucket for a refused request: a flood of caller-chosen keys behind an empty bucket holds nothing", () => {
    const limiter = new RateLimiter(new ManualClock());
    for (let i = 0; i < 5; i++) expect(limiter.take([{ rule: FIVE, key: "ip" }, { rule: SIXTY, key: `login-${i}` }]).allowed).toBe(true);
    expect(limiter.size).toBe(6);
    for (let i = 5; i < 1005; i++) expect(limiter.take([{ rule: FIVE, key: "ip" }, { rule: SIXTY, key: `login-${i}` }]).allowed).toBe(false);
    expect(limiter.size).toBe(6);
  });

  it("parks a caller that calls inside its wait: 60 s doubling to 300 s, then closed", () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock);
    const check = [{ rule: FIVE, key: "ip" }];
    for (let i = 0; i < 5; i++) limiter.take(check);
    expect(limiter.take(check)).toMatchObject({ rung: "throttled", resetSec: 12 });
    clock.advance(SECOND);
    const waits = [];
    const rungs = [];
    for (let i = 0; i < 5; i++) {
      const d = limiter.take(check);
      waits.push(d.resetSec);
      rungs.push(d.rung);
      clock.advance(SECOND);
    }
    expect(waits).toEqual([60, 120, 240, 300, 300]);
    expect(rungs).toEqual(["parked", "parked", "parked", "parked", "closed"]);
    // Even though the bucket has long refilled, the caller stays refused until the quiet window passes.
    clock.advance(299 * SECOND - SECOND);
    expect(limiter.take(check).allowed).toBe(false);
    clock.advance(300 * SECOND + SECOND);
    expect(limiter.take(check)).toMatchObject({ allowed: true, remaining: 4 });
  });

  it("forgives a caller that waited as told", () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock);
    const check = [{ rule: FIVE, key: "ip" }];
    for (let i = 0; i < 5; i++) limiter.take(check);
    const refused = limiter.take(check);
    clock.advance(refused.resetSec * SECOND);
    expect(limiter.take(check).allowed).toBe(true);
  });
});

describe("login brute force over HTTP", () => {
  it("hits 429 rate_limited with the spec's headers and a retry recovery", async () => {
    // A manual clock keeps the bucket arithmetic exact however long password hashing takes.
    const server = await startServer({ clock: "manual" });
    try {
      const user = await createUser(server);
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 11; i++) {
        last = await server.client.post("/api/auth/login", { login: user.handle, password: `guess-${i}` });
        statuses.push(last.status);
        if (i < 10) {
          expect(last.headers.get("ratelimit-limit")).toBe("10");
          expect(last.headers.get("ratelimit-remaining")).toBe(String(9 - i));
          expect(last.headers.get("ratelimit-reset")).toBe(i < 9 ? "0" : "6");
          expect(last.headers.get("retry-after")).toBeNull();
        }
      }
      expect(statuses).toEqual([...Array<number>(10).fill(401), 429]);
      if (last === undefined) throw new Error("no response");
      const reset = last.headers.get("ratelimit-reset");
      expect(Number(reset)).toBeGreaterThan(0);
      for (const name of ["limit", "remaining", "reset"]) {
        expect(last.headers.get(`x-ratelimit-${name}`)).toBe(last.headers.get(`ratelimit-${name}`));
      }
      expect(last.headers.get("ratelimit-remaining")).toBe("0");
      expect(last.headers.get("retry-after")).toBe(reset);
      expect(last.body.error).toMatchObject({
        kind: "rate_limited",
        rung: "throttled",
        recovery: { kind: "retry", retry_after_sec: Number(reset), retry_after_url: `${server.config.baseUrl}/api/auth/login` },
      });

      // Calling again inside the wait parks the caller with a server-minted 60 s wait…
      const parked = await server.client.post("/api/auth/login", { login: user.handle, password: user.password });
      expect(parked.status).toBe(429);
      expect(parked.body.error.rung).toBe("parked");
      expect(parked.headers.get("retry-after")).toBe("60");
      expect(parked.headers.get("ratelimit-reset")).toBe("60");
      expect(parked.body.error.recovery.retry_after_sec).toBe(60);
    } finally {
      await server.close();
    }
  });
});
