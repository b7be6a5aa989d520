import { expect } from "vitest";
import { ManualClock } from "../../src/config/clock.ts";
import type { ApiResponse } from "./client.ts";
import type { TestUser } from "./accounts.ts";
import type { TestServer } from "./server.ts";

/** The server's ManualClock (start the server with `clock: "manual"`). */
export function manualClock(server: TestServer): ManualClock {
  if (!(server.clock instanceof ManualClock)) throw new Error("start the server with clock: \"manual\"");
  return server.clock;
}

export interface Started {
  device_code: string;
  user_code: string;
  verification_url: string;
  verification_url_complete: string;
  polling_interval: number;
  expires_in: number;
}

export async function startPairing(server: TestServer, label?: string): Promise<Started> {
  const res = await server.client.post("/api/pair/start", label === undefined ? {} : { label });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

export function poll(server: TestServer, deviceCode: string): Promise<ApiResponse> {
  return server.client.post("/api/pair/poll", { device_code: deviceCode });
}

/** Approves (or denies) with the user's bearer token. */
export function approve(server: TestServer, user: TestUser, userCode: string, decision?: "approve" | "deny"): Promise<ApiResponse> {
  return server.client.post("/api/pair/approve", decision === undefined ? { user_code: userCode } : { user_code: userCode, decision }, { token: user.token });
}

/** Asserts the spec's rate-limit headers on a response, and their agreement on a 429. */
export function expectRateLimitHeaders(res: ApiResponse, limit: number): void {
  const h = (name: string) => res.headers.get(name);
  expect(h("ratelimit-limit")).toBe(String(limit));
  for (const name of ["limit", "remaining", "reset"]) expect(h(`x-ratelimit-${name}`)).toBe(h(`ratelimit-${name}`));
  const remaining = Number(h("ratelimit-remaining"));
  const reset = Number(h("ratelimit-reset"));
  expect(remaining).toBeGreaterThanOrEqual(0);
  if (res.status === 429) {
    expect(res.body.error.kind).toBe("rate_limited");
    expect(remaining).toBe(0);
    expect(reset).toBeGreaterThan(0);
    expect(h("retry-after")).toBe(String(reset));
    expect(res.body.error.recovery).toMatchObject({ kind: "retry", retry_after_sec: reset });
  } else {
    expect(h("retry-after")).toBeNull();
    if (remaining > 0) expect(reset).toBe(0);
  }
}
