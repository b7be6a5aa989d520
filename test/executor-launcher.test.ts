import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launch, launcherPid } from "../src/runtime/executor/launch.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";
import { alive, parentOf } from "./helpers/process.ts";

/**
 * workerd is started by the launcher (src/runtime/executor/launch.ts), so a restart forks the
 * launcher, a small process of its own, and never holds the server's thread for a fork of the
 * server. Executor-level (no store difference), so on SQLite only.
 */
describe("executor: processes started by the launcher", () => {
  let h: Harness;
  const app = () => ({ ...h.code.publish("launched", appModule({ ping: `async () => "pong"` }), { routes: { ping: { access: "read" } } }), plan: "enterprise" as const });
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1 });
  });
  afterAll(async () => h.close());

  it("each workerd is the launcher's child, and the launcher this process's", async () => {
    const a = app();
    expect(await h.call(a, "ping")).toBe("pong");
    const pid = h.executor.pool.processOf(a.id)?.pid;
    const launcher = launcherPid();
    expect(pid).toBeDefined();
    expect(launcher).toBeDefined();
    expect(parentOf(pid ?? 0)).toBe(launcher);
    expect(parentOf(launcher ?? 0)).toBe(process.pid);
  });

  it("a launcher killed takes its processes along: each is reported crashed, and the next call is served through a new launcher", async () => {
    const a = app();
    expect(await h.call(a, "ping")).toBe("pong");
    const proc = h.executor.pool.processOf(a.id);
    const old = launcherPid();
    if (proc === null || proc.pid === undefined || old === undefined) throw new Error("no live process");
    const pids = h.executor.pool.pids();
    expect(pids).toContain(proc.pid);
    const faultsBefore = h.events.filter((e) => e.type === "fault").length;
    process.kill(old, "SIGKILL");
    await proc.waitForExit();
    // The parent-death signal: no workerd outlives its launcher.
    await expect.poll(() => pids.filter(alive), { timeout: 5_000 }).toEqual([]);
    await expect.poll(() => h.events.filter((e) => e.type === "fault").length - faultsBefore, { timeout: 5_000 }).toBe(pids.length);
    const faults = h.events.filter((e) => e.type === "fault").slice(faultsBefore);
    expect(faults.map((e) => (e.type === "fault" ? e.reason : null))).toEqual(pids.map(() => "crashed"));
    expect(await h.call(a, "ping")).toBe("pong");
    const now = launcherPid();
    expect(now).not.toBe(old);
    expect(parentOf(h.executor.pool.processOf(a.id)?.pid ?? 0)).toBe(now);
  });

  it("a program that cannot start is reported exited with why, and one that runs long is killed on request", async () => {
    // Through setpriv, which exits non-zero with its complaint; without it, Node's spawn error.
    const missing = launch("/nonexistent/workerd", []);
    const gone = await new Promise<{ code: number | null; stderr: string }>((resolve) => missing.onExit(resolve));
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/ENOENT|No such file/);

    const sleeper = launch("/bin/sh", ["-c", "echo started >&2; echo ready >&3; exec sleep 60"], { control: true });
    await new Promise<void>((resolve) => sleeper.onControl((data) => data.includes("ready") && resolve()));
    expect(sleeper.pid).toBeDefined();
    sleeper.kill();
    const killed = await new Promise<{ signal: string | null; stderr: string }>((resolve) => sleeper.onExit(resolve));
    expect(killed.signal).toBe("SIGKILL");
    expect(killed.stderr).toBe("started\n");
  });
});
