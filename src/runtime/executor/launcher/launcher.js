// @ts-check
// The launcher: a small Node process that starts workerd processes for the server and reports on
// them over its IPC channel (launch.ts is the server's side). Starting a process forks the one that
// starts it, and a fork copies the parent's page tables while its thread waits: 20–60 ms for a
// server of 300 MiB–1 GiB, every request stalled, each time a fault restarts a process. Forked
// from this process (about 40 MiB, its own thread), the cost is a millisecond or two, and not ours.
//
// Plain JavaScript with Node's built-ins only, so it runs as it is from src/ and from dist/.
//
// From the server: {type: "spawn", id, binary, args, control, stderrTail} and {type: "kill", id}.
// To the server: {type: "spawned", id, pid, startTime}, {type: "failed", id, message}, {type: "control", id,
// data} (what the child wrote on fd 3) and {type: "exit", id, code, signal, stderr} (the last
// `stderrTail` characters of its stderr), after all its output.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import process from "node:process";

/**
 * @typedef {{ type: "spawn", id: number, binary: string, args: string[], control: boolean, stderrTail: number }
 *   | { type: "kill", id: number }} Order
 */

// util-linux's setpriv sets the parent-death signal and then execs the program, so the pid is the
// program's own: a workerd dies with this process however it dies, `kill -9` included, and this
// process dies with the server the same way (launch.ts starts it so).
const SETPRIV = "/usr/bin/setpriv";
const tied = process.platform === "linux" && existsSync(SETPRIV);

/** @type {Map<number, import("node:child_process").ChildProcess>} */
const children = new Map();

/** @param {Record<string, unknown>} message */
function send(message) {
  // A channel closing meanwhile is "disconnect", below; the callback keeps it from throwing here.
  if (process.connected) process.send?.(message, undefined, {}, () => undefined);
}

/**
 * When the kernel started `pid`, in clock ticks since boot (/proc/PID/stat field 22): with the pid,
 * it names this process and no later one that gets its pid once we have reaped it. Null off Linux.
 * @param {number} pid
 */
function startTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * @param {number} id
 * @param {string} binary
 * @param {string[]} args
 * @param {boolean} control
 * @param {number} stderrTail
 */
function start(id, binary, args, control, stderrTail) {
  const stdio = /** @type {import("node:child_process").StdioOptions} */ (control ? ["ignore", "ignore", "pipe", "pipe"] : ["ignore", "ignore", "pipe"]);
  /** @type {import("node:child_process").ChildProcess} */
  let child;
  try {
    child = tied ? spawn(SETPRIV, ["--pdeathsig", "SIGKILL", "--", binary, ...args], { stdio }) : spawn(binary, args, { stdio });
  } catch (error) {
    // Node throws some failures (ENOMEM from fork, a NUL in an argument) instead of emitting them:
    // that program fails, and the others run on.
    send({ type: "failed", id, message: error instanceof Error ? error.message : String(error) });
    return;
  }
  if (child.pid === undefined) {
    child.once("error", (error) => send({ type: "failed", id, message: error.message }));
    return;
  }
  // A kill or a pipe failing later says so here, not as an uncaught error that would end us all.
  child.on("error", () => undefined);
  children.set(id, child);
  send({ type: "spawned", id, pid: child.pid, startTime: startTime(child.pid) });
  const keep = Math.max(1, stderrTail);
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (/** @type {string} */ chunk) => {
    stderr = (stderr + chunk).slice(-keep);
  });
  const fd3 = /** @type {import("node:stream").Readable | undefined} */ (child.stdio[3]);
  fd3?.setEncoding("utf8");
  fd3?.on("data", (/** @type {string} */ data) => send({ type: "control", id, data }));
  // "close" follows the last of its output, so the tail sent is complete.
  child.once("close", (code, signal) => {
    children.delete(id);
    send({ type: "exit", id, code, signal, stderr });
  });
}

process.on("message", (/** @type {Order} */ order) => {
  if (order.type === "spawn") start(order.id, order.binary, order.args, order.control, order.stderrTail);
  else if (order.type === "kill") children.get(order.id)?.kill("SIGKILL");
});

// The server closed the channel (it exited, or closed its executors): nothing here outlives it.
process.on("disconnect", () => {
  for (const child of children.values()) child.kill("SIGKILL");
  process.exit(0);
});
