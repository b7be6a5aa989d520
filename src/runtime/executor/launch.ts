import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { inTree } from "../../config/paths.ts";
import { procStat } from "./proc-stat.ts";

/** The launcher's program (launcher/launcher.js says why it exists). */
const LAUNCHER = inTree("runtime/executor/launcher/launcher.js");

// The launcher dies with this process however it dies (see launcher.js, which ties workerd the same way).
const SETPRIV = "/usr/bin/setpriv";
const hasSetpriv = process.platform === "linux" && existsSync(SETPRIV);

const STDERR_TAIL = 16 * 1024;
/** How long ended() waits for an exit report: a launcher that does not answer must not hold anyone for ever. */
const EXIT_WAIT_MS = 2_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last characters of its stderr (or why it never started). */
  stderr: string;
  /** It went with its launcher, and did nothing itself to end (an exit no app is to blame for). */
  lost?: true;
}

export interface LaunchOptions {
  /** Relay what the program writes on fd 3 (workerd's --control-fd). */
  control?: boolean;
  /** Characters of its stderr kept for its exit. */
  stderrTail?: number;
}

/**
 * A program the launcher started: the parts of a ChildProcess the executor uses, over the
 * launcher's channel. Its pid is known once the launcher has spawned it, before any of its output.
 */
export class Launched {
  pid: number | undefined = undefined;
  /** When the kernel started it (/proc/PID/stat field 22), as the launcher read it: null off Linux. */
  startTime: string | null = null;
  exit: Exit | null = null;
  private readonly controlListeners = new Set<(data: string) => void>();
  private readonly exitListeners = new Set<(exit: Exit) => void>();

  constructor(
    private readonly killIt: () => void,
    /** Whether its launcher is gone, so it is (or is about to be) gone too, through no doing of its own. */
    readonly orphaned: () => boolean,
  ) {}

  onControl(listener: (data: string) => void): () => void {
    this.controlListeners.add(listener);
    return () => this.controlListeners.delete(listener);
  }

  /** Called once, when it has exited (or never started); at once if that has happened already. */
  onExit(listener: (exit: Exit) => void): () => void {
    if (this.exit !== null) {
      listener(this.exit);
      return () => undefined;
    }
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** Its exit once reported, or null if none comes within EXIT_WAIT_MS (after a kill, say). */
  ended(): Promise<Exit | null> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), EXIT_WAIT_MS).unref();
      this.onExit((exit) => {
        clearTimeout(timer);
        resolve(exit);
      });
    });
  }

  /** SIGKILL, by the launcher, which knows whether the pid is still its child's. */
  kill(): void {
    if (this.exit === null) this.killIt();
  }

  /** @internal The launcher's reports. */
  control(data: string): void {
    for (const listener of this.controlListeners) listener(data);
  }

  /** @internal */
  exited(exit: Exit): void {
    if (this.exit !== null) return;
    this.exit = exit;
    for (const listener of this.exitListeners) listener(exit);
    this.exitListeners.clear();
    this.controlListeners.clear();
  }
}

type Report =
  | { type: "spawned"; id: number; pid: number; startTime: string | null }
  | { type: "failed"; id: number; message: string }
  | { type: "control"; id: number; data: string }
  | { type: "exit"; id: number; code: number | null; signal: NodeJS.Signals | null; stderr: string };

/**
 * The server's side of the launcher: one per server process, started on first use, started again
 * if it dies (taking its programs with it: each is reported exited, SIGKILL). Its channel holds
 * this process open only while programs it started run.
 */
class Launcher {
  private proc: ChildProcess | null = null;
  private nextId = 1;
  private readonly live = new Map<number, Launched>();

  launch(binary: string, args: readonly string[], options: LaunchOptions = {}): Launched {
    const proc = this.running();
    const id = this.nextId++;
    const launched = new Launched(
      () => this.send(proc, { type: "kill", id }),
      () => this.down(proc),
    );
    this.live.set(id, launched);
    proc.channel?.ref();
    this.send(proc, { type: "spawn", id, binary, args, control: options.control === true, stderrTail: options.stderrTail ?? STDERR_TAIL });
    return launched;
  }

  /** The launcher's pid, or undefined when none runs (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  private running(): ChildProcess {
    // One whose channel closed is dying: its exit is on its way, and nothing sent to it arrives.
    if (this.proc !== null && !this.proc.connected) this.lost(this.proc);
    if (this.proc !== null) return this.proc;
    const args = [process.execPath, LAUNCHER];
    // Not this process's loaders (tsx under tests): the launcher is plain JavaScript.
    const env = { ...process.env, NODE_OPTIONS: "" };
    const [command = process.execPath, ...rest] = hasSetpriv ? [SETPRIV, "--pdeathsig", "SIGKILL", "--", ...args] : args;
    const proc = spawn(command, rest, { stdio: ["ignore", "ignore", "inherit", "ipc"], env });
    this.proc = proc;
    proc.unref();
    proc.on("message", (report: Report) => this.report(report));
    proc.on("error", () => this.lost(proc));
    proc.once("exit", () => this.lost(proc));
    return proc;
  }

  private report(report: Report): void {
    const launched = this.live.get(report.id);
    if (launched === undefined) return;
    if (report.type === "spawned") {
      launched.pid = report.pid;
      launched.startTime = report.startTime;
    }
    else if (report.type === "control") launched.control(report.data);
    else {
      const exit = report.type === "failed" ? { code: null, signal: null, stderr: report.message } : { code: report.code, signal: report.signal, stderr: report.stderr };
      this.live.delete(report.id);
      if (this.live.size === 0) this.proc?.channel?.unref();
      launched.exited(exit);
    }
  }

  /** The launcher is gone, and with it (parent-death signal) every program it started. */
  private lost(proc: ChildProcess): void {
    if (this.proc !== proc) return;
    this.proc = null;
    const orphans = [...this.live.values()];
    this.live.clear();
    for (const launched of orphans) launched.exited({ code: null, signal: "SIGKILL", stderr: "the launcher exited", lost: true });
  }

  /**
   * Whether `proc` is gone or going, though Node may not have reported its exit yet: its channel
   * closed, or /proc shows it a zombie or no more (Linux; elsewhere only the channel tells).
   */
  private down(proc: ChildProcess): boolean {
    if (this.proc !== proc || !proc.connected || proc.pid === undefined) return true;
    try {
      return procStat(proc.pid)[0] === "Z";
    } catch (error) {
      return process.platform === "linux" && (error as NodeJS.ErrnoException).code === "ENOENT";
    }
  }

  private send(proc: ChildProcess, message: Record<string, unknown>): void {
    // A launcher that died meanwhile has reported (lost()) or will report every program exited.
    if (proc.connected) proc.send(message, () => undefined);
  }
}

const launcher = new Launcher();

/**
 * Starts `binary` through the launcher, so the fork is the launcher's and not this process's
 * (launcher/launcher.js): Node's thread does not wait for it, however large the server has grown.
 */
export function launch(binary: string, args: readonly string[], options?: LaunchOptions): Launched {
  return launcher.launch(binary, args, options);
}

/** The launcher's pid while it runs. */
export function launcherPid(): number | undefined {
  return launcher.pid;
}
