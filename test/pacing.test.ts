import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { TurnPacer } from "../src/http/pacing.ts";

/** Admits `waits` (lane names, in arrival order) and records which lanes each turn let through. */
async function turns(pacer: TurnPacer, waits: string[]): Promise<string[][]> {
  const seen: string[][] = [];
  let current: string[] = [];
  const done = waits.map((lane) => pacer.wait(lane).then(() => current.push(lane)));
  while (pacer.waiting > 0) {
    await nextTurn();
    seen.push(current);
    current = [];
  }
  await Promise.all(done);
  if (current.length > 0) seen.push(current);
  return seen.filter((turn) => turn.length > 0);
}

describe("TurnPacer: handlers start in fair turns of the event loop", () => {
  it("admits at most perTurn requests per turn, so 50 at once span 13 turns of 4", async () => {
    const seen = await turns(new TurnPacer(4), Array.from({ length: 50 }, () => "app:a"));
    expect(seen.map((turn) => turn.length)).toEqual([...Array.from({ length: 12 }, () => 4), 2]);
  });

  it("rotates lanes: a call behind a 50-call burst at another app, and /healthz, start in the first turn", async () => {
    const seen = await turns(new TurnPacer(4), [...Array.from({ length: 50 }, () => "app:attacker"), "app:victim", "health"]);
    expect(seen[0]).toEqual(["app:attacker", "app:victim", "health", "app:attacker"]);
    expect(seen.flat().filter((lane) => lane === "app:attacker")).toHaveLength(50);
  });

  it("a lone request is admitted in the next turn and the pacer goes idle after", async () => {
    const pacer = new TurnPacer(4);
    let admitted = false;
    const waiting = pacer.wait("control").then(() => (admitted = true));
    expect(admitted).toBe(false);
    await waiting;
    expect(admitted).toBe(true);
    expect(pacer.waiting).toBe(0);
    // A later request schedules a turn again (the pacer is not stuck "scheduled").
    await pacer.wait("control");
  });
});
