import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { procStat } from "../../src/runtime/executor/proc-stat.ts";

/** A TCP port free on loopback right now (for a server process a test starts). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Retries `attempt` until it resolves (a server process starting up), up to the deadline. */
export async function poll(attempt: () => Promise<Response>, deadlineMs = 60_000): Promise<Response> {
  const start = Date.now();
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() - start > deadlineMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Whether a process with this pid exists (signal 0 checks without sending). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The parent pid of `pid`, from /proc (Linux); null when it is gone. */
export function parentOf(pid: number): number | null {
  try {
    return Number(procStat(pid)[1]);
  } catch {
    return null;
  }
}

/** Pids of the processes whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((child) => parentOf(child) === pid);
}

/** Whether the process runs this program (its command line mentions `name`); false when it is gone. */
export function runs(pid: number, name: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(name);
  } catch {
    return false;
  }
}
