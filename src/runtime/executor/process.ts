import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, request } from "undici";
import { launch, type Launched } from "./launch.ts";
import { procStat } from "./proc-stat.ts";
import { renderConfig, workerdBinary, type EgressConfig } from "./workerd-config.ts";

export type StartupFailure = "address_in_use" | "config_invalid" | "exited" | "timeout";

/** workerd did not come up; `stderr` holds its last words for the operator. */
export class WorkerdStartupError extends Error {
  constructor(
    readonly failure: StartupFailure,
    message: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = "WorkerdStartupError";
  }
}

export interface ProcessOptions {
  /** Private (0700) directory holding the config, the workers and the sockets. */
  dir: string;
  /** Unique per process, e.g. `exec-0-3` (slot 0, third start). */
  name: string;
  internalSocketPath: string;
  compatibilityDate: string;
  maxOldSpaceMb: number;
  startupTimeoutMs: number;
  egress: EgressConfig;
  gcEveryCalls: number;
  gcMinIntervalMs: number;
}

/**
 * One workerd process serving the supervisor worker on a unix socket, driven as explicit steps:
 * write config → start (by the launcher, launch.ts) → wait for the control fd's "listen" raced
 * against exit and a timeout → answer pings over a keep-alive undici Agent (calls ride the
 * channel) → SIGKILL on dispose.
 */
export class WorkerdProcess {
  readonly socketPath: string;
  private readonly agent: Agent;
  private killedByUs = false;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly exitWaiters: (() => void)[] = [];
  /** Called once when the process exits for any reason. */
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void = () => undefined;

  private constructor(
    private readonly child: Launched,
    socketPath: string,
    readonly name: string,
  ) {
    this.socketPath = socketPath;
    this.agent = new Agent({ connect: { socketPath }, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000 });
    child.onExit(({ code, signal }) => {
      this.exitInfo = { code, signal };
      this.onExit(code, signal);
      for (const waiter of this.exitWaiters.splice(0)) waiter();
    });
  }

  static async start(o: ProcessOptions): Promise<WorkerdProcess> {
    const socketPath = join(o.dir, `${o.name}.sock`);
    const configPath = join(o.dir, `${o.name}.capnp`);
    writeFileSync(
      configPath,
      renderConfig({
        socketPath,
        internalSocketPath: o.internalSocketPath,
        supervisorFile: "supervisor.worker.js",
        shimFile: "app-shim.worker.js",
        egressFile: "egress.worker.js",
        egress: o.egress,
        compatibilityDate: o.compatibilityDate,
        maxOldSpaceMb: o.maxOldSpaceMb,
        gc: { everyCalls: o.gcEveryCalls, minIntervalMs: o.gcMinIntervalMs },
      }),
      { mode: 0o600 },
    );
    // fd 3 is workerd's control channel: it writes one JSON line per socket once it listens.
    const child = launch(workerdBinary(), ["serve", "--experimental", "--control-fd=3", configPath], { control: true });
    const proc = new WorkerdProcess(child, socketPath, o.name);
    try {
      await proc.waitForListen(o.startupTimeoutMs);
    } catch (error) {
      proc.kill();
      throw error;
    }
    return proc;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get exited(): boolean {
    return this.exitInfo !== null;
  }

  /** True once kill() was called: an exit that follows is ours, not the process's doing. */
  get killed(): boolean {
    return this.killedByUs;
  }

  /** The tail of its stderr, once it has exited. */
  get stderr(): string {
    return this.child.exit?.stderr ?? "";
  }

  /**
   * True when the supervisor answers within `timeoutMs`; a busy-looping isolate blocks it. Over
   * its own connection: op calls ride the channel (channel.ts), so a ping never queues behind them.
   * The time counts while Node's own loop could have heard the answer (see `silence`).
   */
  async ping(timeoutMs: number): Promise<boolean> {
    const abort = new AbortController();
    const answer = request("http://workerd/__brickyard/ping", { dispatcher: this.agent, signal: abort.signal }).then(
      async (res) => {
        await res.body.dump();
        return res.statusCode === 200;
      },
      () => false,
    );
    const quiet = silence(timeoutMs);
    const ok = await Promise.race([answer, quiet.heard]);
    quiet.cancel();
    if (!ok) abort.abort();
    return ok;
  }

  /**
   * Dead or dying, though Node may not have heard yet: a ping failing then is its end, which its
   * exit reports, not a hang. Our SIGKILL counts at once: kill() aborts the ping before the kernel
   * has finished the process. Otherwise Linux's /proc says (a zombie, or no entry); false where
   * /proc is not available.
   */
  gone(): boolean {
    if (this.child.pid === undefined || this.exited || this.killedByUs || this.orphaned()) return true;
    try {
      return this.statFields()[0] === "Z";
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "ENOENT";
    }
  }

  /** Resident set size from /proc (Linux); null where that is not available. */
  rssBytes(): number | null {
    if (this.child.pid === undefined || this.exited) return null;
    try {
      this.statFields();
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, "utf8"));
      return match?.[1] === undefined ? null : Number(match[1]) * 1024;
    } catch {
      return null;
    }
  }

  /**
   * CPU time the process has used (user + system), in ms; null where /proc is not available.
   * /proc/PID/stat counts clock ticks, USER_HZ, which Linux fixes at 100 for user space.
   */
  cpuMs(): number | null {
    if (this.child.pid === undefined || this.exited) return null;
    try {
      const fields = this.statFields();
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return null;
    }
  }

  /** The fields of /proc/PID/stat after the command name, its state first; throws where it cannot be read. */
  private statFields(): string[] {
    const fields = procStat(this.child.pid ?? 0);
    // The launcher reaps it, not us: once it has, the pid may name another process, one that
    // started later. That one is not ours to read, and ours is gone.
    if (this.child.startTime !== null && fields[19] !== this.child.startTime) throw Object.assign(new Error("another process holds the pid"), { code: "ENOENT" });
    return fields;
  }

  /** It went, or is going, with its launcher (launch.ts): not its own doing, so no app is to blame. */
  orphaned(): boolean {
    return this.child.orphaned();
  }

  /**
   * SIGKILL, not SIGTERM: workerd holds no state we must flush (storage lives in the control
   * plane), and a graceful stop would wait on exactly the runaway isolate we are killing.
   */
  kill(): void {
    this.killedByUs = true;
    if (!this.exited) this.child.kill();
    void this.agent.destroy().catch(() => undefined);
  }

  waitForExit(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  private waitForListen(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let buffered = "";
      // Its stderr reaches us with its exit: a process that never listens is killed first, and
      // waited for a little (a launcher that does not answer must not hold a start for ever).
      const timer = setTimeout(() => {
        forgetExit();
        stopReading();
        this.kill();
        void this.child.ended().then(() => finish(new WorkerdStartupError("timeout", `workerd did not listen within ${timeoutMs} ms`, this.stderr)));
      }, timeoutMs);
      const stopReading = this.child.onControl((chunk) => {
        buffered += chunk;
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          try {
            const message = JSON.parse(line) as { event?: string; socket?: string };
            if (message.event === "listen" && message.socket === "http") finish(null);
          } catch {
            // not a control message we know
          }
        }
      });
      const onExit = () => finish(startupFailure(this.stderr, this.exitInfo?.code ?? null));
      const forgetExit = () => {
        const index = this.exitWaiters.indexOf(onExit);
        if (index >= 0) this.exitWaiters.splice(index, 1);
      };
      const finish = (error: Error | null) => {
        clearTimeout(timer);
        stopReading();
        forgetExit();
        if (error === null) resolve();
        else reject(error);
      };
      this.exitWaiters.push(onExit);
    });
  }
}

/** Turns workerd's stderr at a failed start into a typed error. */
function startupFailure(stderr: string, code: number | null): WorkerdStartupError {
  if (/address already in use/i.test(stderr)) return new WorkerdStartupError("address_in_use", "workerd's socket address is already in use", stderr);
  if (/\.capnp:\d+|Parse error|config/i.test(stderr)) return new WorkerdStartupError("config_invalid", "workerd rejected its config", stderr);
  return new WorkerdStartupError("exited", `workerd exited during startup (code ${code})`, stderr);
}

/** A deadline that fires this much past its time was held up by Node's own loop, not the process. */
const STALL_MS = 100;
/** At most this many windows in a row are set again for stalls; past them, silence is silence. */
const MAX_STALLS = 10;

/**
 * Resolves false once `timeoutMs` have passed with Node's loop free to read an answer. A window
 * our loop spent stalled (a long collection, a host short of CPU) is not the process's silence:
 * a deadline that fires late starts a new window, or every process would be killed as hung after
 * any stall of ours, their calls with them. One that fires on time still lets this turn of the
 * loop read what has arrived (timers run before I/O is polled) before it counts as silence.
 */
function silence(timeoutMs: number): { heard: Promise<false>; cancel: () => void } {
  let timer: NodeJS.Timeout | null = null;
  let stalls = 0;
  const heard = new Promise<false>((resolve) => {
    const arm = () => {
      const due = performance.now() + timeoutMs;
      timer = setTimeout(() => {
        if (performance.now() - due > STALL_MS && stalls++ < MAX_STALLS) return arm();
        timer = null;
        setImmediate(() => resolve(false));
      }, timeoutMs);
      // Like AbortSignal.timeout's: a ping's deadline alone does not hold a closing process open.
      timer.unref();
    };
    arm();
  });
  return {
    heard,
    cancel: () => {
      if (timer !== null) clearTimeout(timer);
    },
  };
}
