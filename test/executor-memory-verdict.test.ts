import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryCeiling } from "../src/runtime/executor/memory-ceiling.ts";
import { FAULT_MESSAGES } from "../src/runtime/executor/pool-members.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

const CEILING = 256 * 1024 * 1024;

/**
 * A process the kernel kills at its memory ceiling is faulted `memory`, whichever the pool hears
 * first: its channel dropping or its exit (pool.ts death()). The drop usually comes first, and
 * was read as `crashed`. Executor-level (no store difference), so on SQLite only.
 */
describe("executor: a process killed at its memory ceiling", () => {
  let h: Harness;
  const skip = MemoryCeiling.detect() === null;
  beforeAll(async () => {
    // The watchdog's other verdicts are out of the way: filling 256 MiB a page at a time took
    // 0.7 s of CPU on a machine where a page fault costs 11 µs, and past the ping timeout (1 s,
    // with another test file sharing the two cores) the process was faulted `hung` first.
    if (!skip) h = await startHarness({ dialect: "sqlite", processes: 1, tuning: { memoryMaxBytes: CEILING, pingTimeoutMs: 30_000, cpuBudgetMs: 30_000 } });
  });
  afterAll(async () => h?.close());

  it("is faulted memory, and the call that filled it fails with memory, every time", async (t) => {
    if (skip) {
      console.warn("SKIPPED: this host lets the process create no memory cgroup; the RSS watchdog is the only ceiling here");
      t.skip();
    }
    for (let round = 0; round < 3; round++) {
      // Pages touched one by one: the kernel stops the process at the group's limit, long before
      // the pool's RSS watchdog could look (RSS never passes a limit the kernel holds). A new app
      // each round, as the court quarantines the last one.
      const filler = {
        ...h.code.publish(`filler-${round}`, appModule({ ping: `async () => "pong"`, fill: `async () => { const a = new Uint8Array(2 ** 30); for (let i = 0; i < a.length; i += 4096) a[i] = 1; return a.length; }` }), {
          routes: { ping: { access: "read" }, fill: { access: "write" } },
        }),
        plan: "enterprise" as const,
      };
      expect(await h.call(filler, "ping")).toBe("pong");
      const faultsBefore = h.events.filter((e) => e.type === "fault").length;
      const error = await h.call(filler, "fill").catch((e: unknown) => e);
      // The call's error says why its process went, as its caller sees it.
      expect(error instanceof Error ? error.message : error).toBe(FAULT_MESSAGES.memory);
      await expect.poll(() => h.events.filter((e) => e.type === "fault").length - faultsBefore).toBe(1);
      const fault = h.events.filter((e) => e.type === "fault").at(-1);
      expect(fault?.type === "fault" ? fault.reason : null).toBe("memory");
    }
  });
});
