import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/config/clock.ts";
import { OWNER_STRIKES, Quarantine } from "../src/runtime/executor/quarantine.ts";

describe("executor: quarantine of apps and of accounts", () => {
  it("quarantines a convicted app for the cool-down, then lets it run again", () => {
    const clock = new ManualClock(0);
    const q = new Quarantine(clock, 1000);
    q.add("a");
    expect(q.remaining("a")).toEqual({ ms: 1000, of: "app" });
    clock.advance(999);
    expect(q.remaining("a").ms).toBe(1);
    clock.advance(1);
    expect(q.remaining("a").ms).toBe(0);
  });

  it(`quarantines every app of an account after ${OWNER_STRIKES} convictions within a cool-down, and only then`, () => {
    const clock = new ManualClock(0);
    const q = new Quarantine(clock, 1000);
    for (const app of ["x1", "x2", "x3", "x4"]) q.owner(app, "mallory");
    q.owner("v", "victim");
    q.add("x1");
    clock.advance(600);
    q.add("x2");
    // The first strike has aged out by the third: no account quarantine yet.
    clock.advance(600);
    q.add("x3");
    expect(q.remaining("x4", "mallory").ms).toBe(0);
    clock.advance(100);
    q.add("x4");
    expect(q.remaining("fresh-app", "mallory")).toEqual({ ms: 1000, of: "owner" });
    expect(q.remaining("v", "victim").ms).toBe(0);
    // An unclaimed app has no account to count against.
    q.add("anon");
    expect(q.remaining("anon", null)).toEqual({ ms: 1000, of: "app" });
  });
});
