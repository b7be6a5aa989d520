import { spawn } from "node:child_process";
import type { Brickyard } from "./servers.ts";

/** How long Node's loop was held, at most, from one restart's kill until its new process runs. */
export interface RespawnRow {
  /** Per restart, ascending: the longest gap between turns of the server's loop, in ms. */
  restarts: number[];
  /** Ascending: the longest gap in a quiet window as long as each restart took (the pool's ticks, timers, collections). */
  quiet: number[];
  /** The baseline, ascending, same process and heap: the longest gap around a direct spawn of /bin/true. */
  forks: number[];
  rssMiB: number;
}

/**
 * The loop's longest gap (a 1 ms interval's turns, less the interval) while `work` runs: what a
 * request arriving then would have waited for Node's thread.
 */
async function longestGap(work: () => Promise<void>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last - 1);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(probe);
  }
  return Math.max(0, longest);
}

/**
 * A process restart as a crash causes it: one of the pool's workerd processes killed from outside,
 * until its replacement answers. Against the fork it used to cost: this process spawning a program
 * itself, at the same heap, in the same run.
 */
export async function respawnRow(b: Brickyard, times: number): Promise<RespawnRow> {
  const { pool } = b.built.ctx.executor;
  const restarts: number[] = [];
  const quiet: number[] = [];
  const forks: number[] = [];
  for (let i = 0; i < times; i++) {
    const before = pool.pids();
    const victim = before[0];
    if (victim === undefined) throw new Error("the pool has no live process to restart");
    const started = performance.now();
    restarts.push(
      await longestGap(async () => {
        process.kill(victim, "SIGKILL");
        const deadline = performance.now() + 30_000;
        while (!(pool.pids().length === before.length && !pool.pids().includes(victim))) {
          if (performance.now() > deadline) throw new Error("the pool did not restart its process within 30 s");
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }),
    );
    const took = performance.now() - started;
    quiet.push(await longestGap(() => new Promise((resolve) => setTimeout(resolve, took))));
    forks.push(
      await longestGap(async () => {
        const child = spawn("/bin/true", [], { stdio: "ignore" });
        await new Promise((resolve) => child.once("exit", resolve));
      }),
    );
  }
  const ascending = (a: number, b: number) => a - b;
  return { restarts: restarts.sort(ascending), quiet: quiet.sort(ascending), forks: forks.sort(ascending), rssMiB: process.memoryUsage().rss / 2 ** 20 };
}
