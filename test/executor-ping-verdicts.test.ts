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
    // Stopped, it answers nothing. The pool's watchdog kills it too, as it should, and that kill
    // ends any ping in flight at once: the pool's own ping (300 ms) began at most a moment before
    // the stop, so a ping of 100 ms runs out well before the watchdog's verdict can cut it short.
    process.kill(pid, "SIGSTOP");
    try {
      const started = performance.now();
      expect(await proc.ping(100)).toBe(false);
      expect(performance.now() - started).toBeGreaterThanOrEqual(100);
    } finally {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // killed by the watchdog already
      }
    }
  });
});

/**
 * A ping that fails because the process was killed (ours to kill: a crash, a test, the pool's
 * close) is the process's death, not its silence: its exit reports `crashed`. The kill aborts the
 * ping at once, often before the kernel has finished the process, so /proc alone cannot tell.
 */
describe("executor: a ping cut short by a kill is not a hang", () => {
  let h: Harness;
  beforeAll(async () => {
    // Long enough that the stopped process's ping is still in flight when the test kills it. The
    // CPU budget is out of the way: touching 384 MiB took 1.07 s of CPU on one CI-sized machine
    // (11 µs a page fault), past the default 1 s, and the watchdog restarted the process first.
    h = await startHarness({ dialect: "sqlite", processes: 1, tuning: { pingIntervalMs: 20, pingTimeoutMs: 30_000, cpuBudgetMs: 30_000 } });
  });
  afterAll(async () => h.close());

  it("reports the kill as crashed, with the ping in flight", async () => {
    // 384 MiB touched: the kernel takes a while to tear the process down after SIGKILL, the
    // window in which /proc still shows it alive.
    const hold = `async () => { const a = new Uint8Array(384 * 2 ** 20); for (let i = 0; i < a.length; i += 4096) a[i] = 1; globalThis.held = a; return "held"; }`;
    const app = { ...h.code.publish("killed", appModule({ hold }), { routes: { hold: { access: "read" } } }), plan: "enterprise" as const };
    expect(await h.call(app, "hold")).toBe("held");
    const proc = h.executor.pool.processOf(app.id);
    const pid = proc?.pid;
    if (proc === null || pid === undefined) throw new Error("no live process");
    const faultsBefore = h.events.filter((e) => e.type === "fault").length;
    // Stopped, it cannot answer: the watchdog's next ping (every 20 ms) stays in flight.
    process.kill(pid, "SIGSTOP");
    const pinged = proc.ping(30_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    proc.kill();
    // Dying by our SIGKILL is gone already, whether or not the kernel has finished it yet.
    expect(proc.gone()).toBe(true);
    expect(await pinged).toBe(false);
    await expect.poll(() => h.events.filter((e) => e.type === "fault").length, { timeout: 10_000 }).toBeGreaterThan(faultsBefore);
    const faults = h.events.filter((e) => e.type === "fault").slice(faultsBefore);
    expect(faults.map((e) => (e.type === "fault" ? e.reason : null))).toEqual(["crashed"]);
  });
});
