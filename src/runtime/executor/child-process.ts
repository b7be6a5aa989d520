import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { existsSync } from "node:fs";

// util-linux's setpriv sets the parent-death signal and then execs the program, so the pid we
// get is the program's own. It ships with every Debian and most other Linux systems.
const SETPRIV = "/usr/bin/setpriv";
const hasSetpriv = process.platform === "linux" && existsSync(SETPRIV);

/**
 * Spawns a workerd that dies with this process however this process dies, `kill -9` included:
 * the kernel sends it SIGKILL when its parent goes (PR_SET_PDEATHSIG). A graceful close kills
 * children itself; this covers the crash, where no code of ours runs. Without setpriv (not
 * Linux) the child is spawned plainly and only a graceful close stops it.
 */
export function spawnTied(binary: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return hasSetpriv ? spawn(SETPRIV, ["--pdeathsig", "SIGKILL", "--", binary, ...args], options) : spawn(binary, args, options);
}
