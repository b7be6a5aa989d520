import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * A hard memory ceiling per workerd process, set by the kernel: each process goes into a memory
 * cgroup of its own whose limit makes the kernel kill it the moment it passes (a 2 GiB typed
 * array is off V8's heap, so `--max-old-space-size` never sees it). cgroup v2 (`memory.max`) or
 * v1 (`memory.limit_in_bytes`), wherever this process may create child groups; where it may not,
 * `detect()` returns null and the pool's RSS watchdog is the only ceiling.
 */
export class MemoryCeiling {
  private constructor(
    private readonly base: string,
    private readonly limitFile: string,
  ) {}

  static detect(): MemoryCeiling | null {
    let own: string;
    try {
      own = readFileSync("/proc/self/cgroup", "utf8");
    } catch {
      return null;
    }
    for (const line of own.split("\n")) {
      const [, controllers, path] = line.split(":");
      if (path === undefined) continue;
      const candidates: [string, string][] = [];
      if (controllers === "memory") candidates.push([join("/sys/fs/cgroup/memory", path), "memory.limit_in_bytes"]);
      // v2 lets a group hold processes of its own or children with controllers, not both, so the
      // children go beside ours only when ours already delegates memory to its children.
      if (controllers === "" && subtreeHasMemory(join("/sys/fs/cgroup", path))) candidates.push([join("/sys/fs/cgroup", path), "memory.max"]);
      for (const [base, limitFile] of candidates) {
        const ceiling = new MemoryCeiling(base, limitFile);
        if (ceiling.works()) return ceiling;
      }
    }
    return null;
  }

  /**
   * Puts `pid` in a group of its own limited to `maxBytes`; false when the kernel refused. Off
   * Node's thread: moving a process between groups waits for the kernel (measured 7–14 ms here,
   * each start of a process), and every request would wait with it.
   */
  async confine(name: string, pid: number, maxBytes: number): Promise<boolean> {
    const dir = this.dir(name);
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, this.limitFile), String(maxBytes));
      await writeFile(join(dir, "cgroup.procs"), String(pid));
      return true;
    } catch {
      return false;
    }
  }

  /** True when the kernel killed a process of this group for passing the limit. */
  oomKilled(name: string): boolean {
    const file = this.limitFile === "memory.max" ? "memory.events" : "memory.oom_control";
    try {
      const match = /^oom_kill (\d+)$/m.exec(readFileSync(join(this.dir(name), file), "utf8"));
      return match !== null && Number(match[1]) > 0;
    } catch {
      return false;
    }
  }

  /** Removes a process's group once it has exited (the kernel refuses while it holds a process). */
  release(name: string): void {
    try {
      rmdirSync(this.dir(name));
    } catch {
      // still populated for a moment, or gone already; sweep() gets it at the next start
    }
  }

  /** Groups left by instances that died without releasing theirs (their pid is gone). */
  sweep(): void {
    for (const entry of safeList(this.base)) {
      const match = /^brickyard-(\d+)-/.exec(entry);
      if (match === null || existsSync(`/proc/${match[1]}`)) continue;
      try {
        rmdirSync(join(this.base, entry));
      } catch {
        // a process still in it: leave it
      }
    }
  }

  private dir(name: string): string {
    return join(this.base, `brickyard-${process.pid}-${name}`);
  }

  private works(): boolean {
    const probe = this.dir("probe");
    try {
      mkdirSync(probe);
      const ok = existsSync(join(probe, this.limitFile));
      rmdirSync(probe);
      return ok;
    } catch {
      return false;
    }
  }
}

function subtreeHasMemory(dir: string): boolean {
  try {
    return readFileSync(join(dir, "cgroup.subtree_control"), "utf8").split(/\s+/).includes("memory");
  } catch {
    return false;
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
