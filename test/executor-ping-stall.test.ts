import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

/** Holds Node's thread for `ms`, as a long collection or a host short of CPU would. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // nothing: the loop cannot run
  }
}

/**
 * The watchdog blames the process for silence, never for a stall of Node's own loop: a ping's
 * answer that arrived while Node could not read it is read, and no process is killed as hung,
 * its calls with it. Executor-level (no store difference), so on SQLite only.
 */
describe("executor: a stall of Node's loop is not a hung process", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1, tuning: { pingIntervalMs: 50, pingTimeoutMs: 300 } });
  });
  afterAll(async () => h.close());

  it("a ping in flight across a stall longer than its timeout is answered, and the pool faults no process", async () => {
    const app = { ...h.code.publish("steady", appModule({ ping: `async () => "pong"` }), { routes: { ping: { access: "read" } } }), plan: "enterprise" as const };
    expect(await h.call(app, "ping")).toBe("pong");
    const proc = h.executor.pool.processOf(app.id);
    expect(proc).not.toBeNull();
    const faultsBefore = h.events.filter((e) => e.type === "fault").length;

    for (let round = 0; round < 3; round++) {
      const pinged = proc!.ping(300); // eslint-disable-line @typescript-eslint/no-non-null-assertion
      stall(900);
      expect(await pinged).toBe(true);
    }
    // The pool's own pings were in flight across the stalls too; its next call finds the process.
    expect(await h.call(app, "ping")).toBe("pong");
    expect(h.events.filter((e) => e.type === "fault").slice(faultsBefore)).toEqual([]);
  });

  it("a process that does not answer is still silent: its ping fails after the timeout", async () => {
    const app = { ...h.code.publish("frozen", appModule({ ping: `async () => "pong"` }), { routes: { ping: { access: "read" } } }), plan: "enterprise" as const };
    expect(await h.call(app, "ping")).toBe("pong");
    const proc = h.executor.pool.processOf(app.id);
    const pid = proc?.pid;
    if (proc === null || pid === undefined) throw new Error("no live process");
    // Stopped, it answers nothing (the pool's watchdog kills it meanwhile, as it should).
    process.kill(pid, "SIGSTOP");
    try {
      const started = performance.now();
      expect(await proc.ping(300)).toBe(false);
      expect(performance.now() - started).toBeGreaterThanOrEqual(300);
    } finally {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // killed by the watchdog already
      }
    }
  });
});
