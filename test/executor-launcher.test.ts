import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { launch, launcherPid } from "../src/runtime/executor/launch.ts";
import { MemoryCeiling } from "../src/runtime/executor/memory-ceiling.ts";
import { DEFAULT_TUNING } from "../src/runtime/executor/tuning.ts";
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

  it("each workerd is in a memory group of its own, limited to memoryMaxBytes, where this host allows one", async (t) => {
    if (MemoryCeiling.detect() === null) {
      console.warn("SKIPPED: this host lets the process create no memory cgroup; the RSS watchdog is the only ceiling here");
      t.skip();
    }
    const a = app();
    expect(await h.call(a, "ping")).toBe("pong");
    const pid = h.executor.pool.processOf(a.id)?.pid ?? 0;
    // Placed off Node's thread (memory-ceiling.ts confine), and before the process joins the pool.
    const group = readFileSync(`/proc/${pid}/cgroup`, "utf8");
    const path = new RegExp(`/brickyard-${process.pid}-exec-[\\w-]+$`, "m").exec(group)?.[0];
    expect(path, group).toBeDefined();
    const mount = group.startsWith("0::") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    const line = group.split("\n").find((l) => l.endsWith(path ?? "?")) ?? "";
    const dir = `${mount}${line.slice(line.lastIndexOf(":") + 1)}`;
    const limit = readFileSync(`${dir}/${mount.endsWith("memory") ? "memory.limit_in_bytes" : "memory.max"}`, "utf8").trim();
    expect(Number(limit)).toBe(DEFAULT_TUNING.memoryMaxBytes);
  });

  it("a launcher killed takes its processes along: each is reported crashed, no app is charged, and the next call is served through a new launcher", async () => {
    const a = app();
    expect(await h.call(a, "ping")).toBe("pong");
    // An app with a call in flight when the launcher goes: the one the court would suspect, had
    // its process crashed by itself.
    const slow = { ...h.code.publish("slow", appModule({ wait: `async () => { await new Promise((r) => setTimeout(r, 2000)); return "waited"; }` }), { routes: { wait: { access: "read" } } }), plan: "enterprise" as const };
    expect(await h.call(slow, "wait")).toBe("waited");
    const inFlight = h.call(slow, "wait").catch((error: unknown) => error);
    await expect.poll(() => h.executor.pool.processOf(slow.id) !== null).toBe(true);
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
    expect(faults.map((e) => (e.type === "fault" ? { suspects: e.suspects, culprit: e.culprit, quarantined: e.quarantined } : null))).toEqual(pids.map(() => ({ suspects: [], culprit: null, quarantined: null })));
    await inFlight;
    expect(await h.call(a, "ping")).toBe("pong");
    const now = launcherPid();
    expect(now).not.toBe(old);
    expect(parentOf(h.executor.pool.processOf(a.id)?.pid ?? 0)).toBe(now);
  });

  it("a program Node refuses to spawn fails alone: the launcher and the pool's processes run on", async () => {
    const a = app();
    expect(await h.call(a, "ping")).toBe("pong");
    const before = launcherPid();
    const pids = h.executor.pool.pids();
    // A NUL byte in an argument: Node's spawn throws at once instead of reporting an error.
    const refused = launch("/bin/true", ["a\0b"]);
    const exit = await new Promise<{ code: number | null; stderr: string }>((resolve) => refused.onExit(resolve));
    expect(refused.pid).toBeUndefined();
    expect(exit.code).toBeNull();
    expect(exit.stderr).toMatch(/null bytes/);
    expect(launcherPid()).toBe(before);
    expect(pids.every(alive)).toBe(true);
    expect(await h.call(a, "ping")).toBe("pong");
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
