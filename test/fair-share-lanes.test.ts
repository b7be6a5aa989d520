import { describe, expect, it } from "vitest";
import { NotAdmitted, PrincipalLanes, type Ticket } from "../src/http/fair-share/lanes.ts";

/** Lanes on a hand-driven clock: time moves only when the test says, and rests wake then. */
function manualLanes(restFactor = 2, maxRestMs = 250) {
  let now = 0;
  const timers: { at: number; wake: () => void }[] = [];
  const lanes = new PrincipalLanes({ restFactor, maxRestMs, now: () => now, after: (ms, wake) => timers.push({ at: now + ms, wake }) });
  return {
    lanes,
    /** Moves the clock by `ms`, waking every rest that ends by then. */
    advance: (ms: number) => {
      now += ms;
      for (const timer of timers.filter((t) => t.at <= now)) {
        timers.splice(timers.indexOf(timer), 1);
        timer.wake();
      }
    },
    /** Fires the oldest timer now, whether or not its time has come. */
    wakeNext: () => timers.shift()?.wake(),
    /** How long each timer still has to run. */
    timersLeft: () => timers.map((t) => t.at - now),
    pendingTimers: () => timers.length,
  };
}

/** Whether a ticket has been admitted, as seen after pending promise callbacks ran. */
async function admitted(ticket: Ticket): Promise<boolean> {
  let yes = false;
  void ticket.admitted.then(
    () => (yes = true),
    () => undefined,
  );
  await Promise.resolve();
  await Promise.resolve();
  return yes;
}

describe("PrincipalLanes", () => {
  it("runs one request of a lane at a time, in arrival order, and rests twice as long as each took", async () => {
    const { lanes, advance } = manualLanes();
    const [a, b, c] = [lanes.enter("user:1"), lanes.enter("user:1"), lanes.enter("user:1")];
    expect([await admitted(a), await admitted(b), await admitted(c)]).toEqual([true, false, false]);
    advance(3);
    a.leave();
    // a took 3 ms: its lane rests 6 ms before b.
    advance(5);
    expect(await admitted(b)).toBe(false);
    advance(1);
    expect(await admitted(b)).toBe(true);
    expect(await admitted(c)).toBe(false);
    b.leave();
    // b took no time at all: nothing to rest.
    expect(await admitted(c)).toBe(true);
    c.leave();
    expect(lanes.size).toBe(0);
  });

  it("rests the whole time even when its timer fires early", async () => {
    const { lanes, advance, wakeNext, timersLeft } = manualLanes();
    const first = lanes.enter("user:1");
    const second = lanes.enter("user:1");
    advance(10);
    first.leave();
    // A timer that fires 3 ms before the 20 ms rest is over: the lane waits out the 3 ms.
    advance(17);
    wakeNext();
    expect(await admitted(second)).toBe(false);
    expect(timersLeft()).toEqual([3]);
    advance(3);
    expect(await admitted(second)).toBe(true);
  });

  it("caps the rest after a long request", async () => {
    const { lanes, advance } = manualLanes(2, 250);
    const long = lanes.enter("user:1");
    const next = lanes.enter("user:1");
    advance(10_000);
    long.leave();
    advance(249);
    expect(await admitted(next)).toBe(false);
    advance(1);
    expect(await admitted(next)).toBe(true);
  });

  it("does not make one lane wait on another", async () => {
    const { lanes } = manualLanes();
    const busy = lanes.enter("user:flood");
    lanes.enter("user:flood");
    const other = lanes.enter("user:neighbour");
    expect([await admitted(busy), await admitted(other)]).toEqual([true, true]);
  });

  it("lets a request whose client left before its turn go without running it or holding the lane", async () => {
    const { lanes, advance } = manualLanes();
    const first = lanes.enter("address:10.0.0.1");
    const gone = lanes.enter("address:10.0.0.1");
    const last = lanes.enter("address:10.0.0.1");
    gone.leave();
    await expect(gone.admitted).rejects.toBeInstanceOf(NotAdmitted);
    first.leave();
    advance(0);
    expect(await admitted(last)).toBe(true);
    // Leaving twice (answered, then the socket's close) ends the turn once.
    last.leave();
    last.leave();
    expect(lanes.size).toBe(0);
  });

  it("refuses what still waits when the server closes, and runs later requests at once", async () => {
    const { lanes } = manualLanes();
    const running = [lanes.enter("user:1"), lanes.enter("user:2")];
    const waiting = [lanes.enter("user:1"), lanes.enter("user:2"), lanes.enter("user:1")];
    lanes.close();
    const outcomes = await Promise.allSettled(waiting.map((ticket) => ticket.admitted));
    expect(outcomes.map((outcome) => (outcome.status === "rejected" ? (outcome.reason as Error).constructor.name : "admitted"))).toEqual(["NotAdmitted", "NotAdmitted", "NotAdmitted"]);
    expect([await admitted(running[0] as Ticket), await admitted(running[1] as Ticket)]).toEqual([true, true]);
    expect(lanes.waiting).toBe(0);
    const late = lanes.enter("user:1");
    expect(await admitted(late)).toBe(true);
    late.leave();
    running.forEach((ticket) => ticket.leave());
    expect(lanes.size).toBe(0);
  });

  it("forgets a lane once its rest is over and nothing waits", async () => {
    const { lanes, advance, pendingTimers } = manualLanes();
    const only = lanes.enter("user:1");
    expect(await admitted(only)).toBe(true);
    advance(4);
    only.leave();
    expect([lanes.size, pendingTimers()]).toEqual([1, 1]);
    advance(8);
    expect([lanes.size, pendingTimers()]).toEqual([0, 0]);
  });
});
