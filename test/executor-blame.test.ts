import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/config/clock.ts";
import { judge, type Evidence } from "../src/runtime/executor/blame.ts";
import { FirstCalls } from "../src/runtime/executor/first-calls.ts";
import { Verdicts } from "../src/runtime/executor/verdicts.ts";

const WINDOW = 10_000;

function evidence(parts: Partial<Evidence>): Evidence {
  return { inflight: [], ran: new Map(), background: new Set(), healthyAt: 0, ...parts };
}

/** The rules the pool judges a fault by (blame.ts, verdicts.ts, first-calls.ts); the pool's use of them is in test/hostile/. */
describe("executor: blame", () => {
  it("one app that could have run code there is the culprit, for certain", () => {
    const v = judge(evidence({ ran: new Map([["a", 900]]), inflight: [{ appId: "a", since: 900 }], healthyAt: 800 }), WINDOW, 1_000);
    expect(v).toMatchObject({ suspects: ["a"], culprit: "a", sole: true });
    expect([...v.charged]).toEqual(["a"]);
  });

  it("a stall after every call answered: the app with background work pending, not the app that only ran lately", () => {
    const v = judge(evidence({ ran: new Map([["victim", 950], ["attacker", 900]]), background: new Set(["attacker"]), healthyAt: 920 }), WINDOW, 1_000);
    expect(v.suspects.sort()).toEqual(["attacker", "victim"]);
    expect(v).toMatchObject({ culprit: "attacker", sole: false });
    expect([...v.charged]).toEqual(["attacker"]);
  });

  it("calls sent after the process last answered a ping are stuck behind the culprit, not suspects of it", () => {
    const v = judge(
      evidence({
        ran: new Map([["victim", 1_000], ["attacker", 700]]),
        inflight: [{ appId: "victim", since: 960 }, { appId: "victim", since: 990 }],
        background: new Set(["attacker"]),
        healthyAt: 950,
      }),
      WINDOW,
      1_000,
    );
    expect(v.culprit).toBe("attacker");
  });

  it("with no background work and no call in flight while pings were answered: the earliest call in flight", () => {
    const v = judge(evidence({ ran: new Map([["b", 990], ["a", 960]]), inflight: [{ appId: "b", since: 990 }, { appId: "a", since: 960 }], healthyAt: 900 }), WINDOW, 1_000);
    expect(v).toMatchObject({ culprit: "a", sole: false });
  });

  it("two apps with calls that had their turn and never finished: no culprit, every suspect charged", () => {
    const v = judge(evidence({ ran: new Map([["a", 500], ["b", 600]]), inflight: [{ appId: "a", since: 500 }, { appId: "b", since: 600 }], healthyAt: 800 }), WINDOW, 1_000);
    expect(v.culprit).toBeNull();
    expect([...v.charged].sort()).toEqual(["a", "b"]);
  });

  it("apps that ran long before the last good ping and left nothing pending are not suspects; with nobody else, all that ran are", () => {
    expect(judge(evidence({ ran: new Map([["old", 100], ["new", 950]]), healthyAt: 900 }), WINDOW, 20_000).suspects).toEqual(["new"]);
    expect(judge(evidence({ ran: new Map([["x", 100], ["y", 200]]), healthyAt: 900 }), WINDOW, 20_000).suspects.sort()).toEqual(["x", "y"]);
  });
});

describe("executor: verdicts", () => {
  it("a second conviction quarantines when one of the two was certain, and parole lasts the window", () => {
    const clock = new ManualClock(0);
    const verdicts = new Verdicts(clock, 60_000);
    expect(verdicts.convict("a", false)).toBe(false);
    expect(verdicts.onParole("a")).toBe(true);
    expect(verdicts.convict("a", true)).toBe(true);
    expect(verdicts.convict("b", false)).toBe(false);
    expect(verdicts.convict("b", false)).toBe(false);
    clock.advance(60_000);
    expect(verdicts.onParole("a")).toBe(false);
    expect(verdicts.convict("a", true)).toBe(false);
  });

  it("code that never answered a call is quarantined at its first certain conviction, not at a likely one", () => {
    const verdicts = new Verdicts(new ManualClock(0), 60_000);
    expect(verdicts.convict("fresh", true, true)).toBe(true);
    expect(verdicts.convict("maybe", false, true)).toBe(false);
  });
});

describe("executor: first calls", () => {
  it("a revision graduates after its calls are answered and its lane has built it; a newer one starts over; an older call counts for nothing", () => {
    const first = new FirstCalls(3);
    expect(first.graduated("a", 1)).toBe(false);
    expect([first.answered("a", 1), first.answered("a", 1), first.answered("a", 1)]).toEqual([false, false, true]);
    // Its calls stay where its isolate is until the lane's warm-up is over (they would wait for that build).
    expect(first.graduated("a", 1)).toBe(false);
    first.built("a", 2);
    expect(first.graduated("a", 1)).toBe(false);
    first.built("a", 1);
    expect(first.graduated("a", 1)).toBe(true);
    expect(first.answered("a", 1)).toBe(false);
    expect(first.answered("a", 2)).toBe(false);
    expect(first.graduated("a", 2)).toBe(false);
    expect(first.graduated("a", 1)).toBe(false);
    expect(first.answered("a", 1)).toBe(false);
  });

  it("code is untried until one of its calls answered; a newer revision placed starts over", () => {
    const first = new FirstCalls(3);
    expect(first.untried("a")).toBe(true);
    first.placed("a", 1);
    expect(first.untried("a")).toBe(true);
    first.answered("a", 1);
    expect(first.untried("a")).toBe(false);
    first.placed("a", 2);
    expect(first.untried("a")).toBe(true);
  });
});
