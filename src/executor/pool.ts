import type { Clock } from "../config/clock.ts";
import { ChannelError, ExecutorChannel } from "./channel.ts";
import type { ExecutorTuning } from "./executor.ts";
import type { BindingCall, BindingReply } from "./internal-api/bindings.ts";
import type { CodeBundle } from "./internal-api/code-cache.ts";
import { IsolateTable } from "./isolates.ts";
import { WorkerdProcess, type ProcessOptions } from "./process.ts";
import type { Quarantine } from "./quarantine.ts";
import { ExecutorFault, type ExecutorCall, type ExecutorOutcome, type FaultReason } from "./types.ts";

/** The pool's share of the executor's tuning (see ExecutorTuning for what each knob means). */
type PoolTuning = Pick<
  ExecutorTuning,
  "pingIntervalMs" | "pingTimeoutMs" | "maxIsolatesPerProcess" | "isolateIdleMs" | "rssHighWaterBytes" | "drainMs" | "channelRotateEvictions" | "channelRotateCalls"
>;

export interface PoolOptions extends Omit<ProcessOptions, "name">, PoolTuning {
  size: number;
  /** Answers the binding calls (env.KV …) that come back over each process's channel. */
  bindings: (call: BindingCall) => Promise<BindingReply>;
}

export type PoolEvent =
  | { type: "fault"; slot: number; reason: FaultReason; suspects: string[]; quarantined: string | null; failedCalls: number }
  | { type: "recycle"; slot: number; rssBytes: number }
  | { type: "channel_rotated"; slot: number }
  | { type: "start_failed"; slot: number; error: unknown };

interface Inflight {
  appId: string;
  startedAt: number;
  /** performance.now() at the start: progress is judged in real time, whatever the clock. */
  since: number;
}

/** A live process and what the pool knows about it. */
interface Member {
  proc: WorkerdProcess;
  /** Where new calls go. */
  channel: ExecutorChannel;
  /** Every open channel: the current one and any still draining after a rotation. */
  channels: Set<ExecutorChannel>;
  /** Evictions and calls since the current channel opened (see rotate()). */
  evictions: number;
  calls: number;
  rotating: boolean;
  /** performance.now() when a call last finished here: a process that stopped may be blocked. */
  lastDone: number;
  /** One signal for all of the process's calls: a fault fails every one of them anyway. */
  abort: AbortController;
  inflight: Set<Inflight>;
  isolates: IsolateTable;
  faulted: boolean;
  retiring: boolean;
  pinging: boolean;
  /** Resolved whenever in-flight calls drop to zero. */
  idleWaiters: (() => void)[];
}

interface Slot {
  index: number;
  starts: number;
  current: Member | null;
  starting: Promise<Member> | null;
  recycling: boolean;
  /** Apps that were in flight when this slot's process went down, not yet cleared. */
  suspects: Set<string>;
  /** Held while a suspect's probation call runs alone on the process. */
  exclusive: Promise<void> | null;
  /** Calls placed on this slot and not yet answered, counted from placement on. */
  load: number;
}

/**
 * N workerd processes; each app is routed to one by a stable hash of its id. A watchdog pings
 * every process: one that stops answering or exits is killed and restarted and its in-flight
 * calls fail. Which call ran away cannot be told from outside a blocked process, so: if one app
 * was in flight it is quarantined; if several were, each becomes a suspect whose next call runs
 * alone on the process (probation) — the culprit then faults alone and is quarantined, the
 * others are cleared.
 */
export class ExecutorPool {
  private readonly slots: Slot[];
  /** Every live process, draining ones included, so close() can kill them all. */
  private readonly members = new Set<Member>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  onEvent: (event: PoolEvent) => void = () => undefined;

  constructor(
    private readonly o: PoolOptions,
    private readonly clock: Clock,
    private readonly quarantine: Quarantine,
    private readonly bundle: (appId: string, revision: number) => Promise<CodeBundle | null>,
  ) {
    this.slots = Array.from({ length: o.size }, (_, index) => ({ index, starts: 0, current: null, starting: null, recycling: false, suspects: new Set(), exclusive: null, load: 0 }));
  }

  async start(): Promise<void> {
    await Promise.all(this.slots.map((slot) => this.ensure(slot)));
    this.timer = setInterval(() => this.tick(), this.o.pingIntervalMs);
    this.timer.unref();
  }

  /** True when every slot has a live process. */
  healthy(): boolean {
    return !this.closed && this.slots.every((s) => s.current !== null && !s.current.faulted);
  }

  async invoke(call: ExecutorCall): Promise<ExecutorOutcome> {
    if (this.closed) throw new ExecutorFault("shutting_down", "not_started", "the executor is shutting down");
    const left = this.quarantine.remaining(call.appId);
    if (left > 0) {
      throw new ExecutorFault("quarantined", "not_started", `this app took an executor down and is quarantined for ${Math.ceil(left / 1000)} s more`);
    }
    const slot = this.placeFor(call.appId);
    slot.load += 1;
    try {
      return await this.place(slot, call);
    } finally {
      slot.load -= 1;
    }
  }

  private async place(slot: Slot, call: ExecutorCall): Promise<ExecutorOutcome> {
    while (slot.exclusive !== null) await slot.exclusive;
    if (!slot.suspects.has(call.appId)) return this.run(slot, call);
    let release = () => undefined as void;
    slot.exclusive = new Promise<void>((resolve) => (release = resolve));
    try {
      const current = slot.current;
      if (current !== null && current.inflight.size > 0) await new Promise<void>((resolve) => current.idleWaiters.push(resolve));
      const outcome = await this.run(slot, call);
      slot.suspects.delete(call.appId);
      return outcome;
    } finally {
      slot.exclusive = null;
      release();
    }
  }

  private async run(slot: Slot, call: ExecutorCall): Promise<ExecutorOutcome> {
    let member: Member;
    try {
      member = await this.ensure(slot);
    } catch {
      throw new ExecutorFault("unavailable", "not_started", "no executor process is available");
    }
    const key = `${call.appId}:${call.revision}:${call.secretsVersion}`;
    await member.isolates.evicting.get(key);
    // First call of this isolate in this process: send the code along, saving the supervisor a
    // round trip to the internal API. (If it is missing, the supervisor still asks for it.)
    const code = member.isolates.has(key) ? null : await this.bundle(call.appId, call.revision).catch(() => null);
    const entry: Inflight = { appId: call.appId, startedAt: this.clock.now(), since: performance.now() };
    member.inflight.add(entry);
    member.isolates.begin(key, entry.startedAt);
    if (member.isolates.size > this.o.maxIsolatesPerProcess) this.evict(slot, member, this.o.maxIsolatesPerProcess, 0);
    try {
      const run = {
        key,
        appId: call.appId,
        caps: call.caps,
        code,
        op: call.op,
        invocation: call.headers["x-svc-invocation"] ?? "",
        headers: { ...call.headers, "content-type": "application/json" },
        body: call.body,
        ...(call.allowance === undefined ? {} : { allowance: call.allowance }),
      };
      if (++member.calls >= this.o.channelRotateCalls) this.rotate(slot, member);
      return await member.channel.run(run, call.deadlineMs);
    } catch (error) {
      const reason: unknown = member.abort.signal.reason;
      if (reason instanceof ExecutorFault) throw reason;
      if (error instanceof ChannelError && error.reason === "deadline") {
        throw new ExecutorFault("deadline", "may_have_run", "the operation ran past its deadline");
      }
      // A closed channel usually means the process died; its exit event may lag the socket
      // error, so give it a moment to arrive and fault the process with this call still counted.
      await Promise.race([member.proc.waitForExit(), new Promise((resolve) => setTimeout(resolve, 250))]);
      const fault: unknown = member.abort.signal.reason;
      if (fault instanceof ExecutorFault) throw fault;
      throw new ExecutorFault("crashed", "may_have_run", `the executor connection failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      member.inflight.delete(entry);
      member.lastDone = performance.now();
      member.isolates.end(key);
      if (member.inflight.size === 0) for (const wake of member.idleWaiters.splice(0)) wake();
      if (member.retiring && member.inflight.size === 0) member.proc.kill();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    await Promise.all(this.slots.map((s) => s.starting?.catch(() => null) ?? Promise.resolve(null)));
    await Promise.all(
      [...this.members].map(async (m) => {
        this.failAll(m, new ExecutorFault("shutting_down", "may_have_run", "the executor is shutting down"));
        m.proc.kill();
        await m.proc.waitForExit();
      }),
    );
  }

  /** Total RSS of the live processes, for tests and the density bound. */
  rssBytes(): number {
    return this.slots.reduce((sum, s) => sum + (s.current?.proc.rssBytes() ?? 0), 0);
  }

  /** Tells every process's KV read cache that a write to (app, key) committed (see channel.ts). */
  invalidate(appId: string, key: string, epoch: number): void {
    for (const member of this.members) for (const channel of member.channels) channel.invalidate(appId, key, epoch);
  }

  /** Process ids of the live processes (the benchmark reads their CPU time). */
  pids(): number[] {
    return this.slots.flatMap((s) => (s.current?.proc.pid === undefined ? [] : [s.current.proc.pid]));
  }

  /** The live process of a slot (tests kill it to prove restarts). */
  processOf(appId: string): WorkerdProcess | null {
    return this.slotFor(appId).current?.proc ?? null;
  }

  /**
   * The app's own slot or, while that process is busy, a second one its id also hashes to (two
   * choices): a hot app then gets the threads of two processes, and its isolate is loaded in
   * both. Only between processes whose calls keep finishing: one that stopped may be held by a
   * runaway, and spilling onto it, or away from a process it blocks, would spread the damage.
   */
  private placeFor(appId: string): Slot {
    const primary = this.slotFor(appId);
    const p = primary.current;
    if (this.slots.length < 2 || p === null || primary.exclusive !== null || primary.suspects.has(appId) || primary.load < SPILL_AT) return primary;
    const secondary = this.slots[(primary.index + 1 + (fnv1a(`${appId}#2`) % (this.slots.length - 1))) % this.slots.length];
    const s = secondary?.current ?? null;
    if (secondary === undefined || s === null || s.faulted || secondary.exclusive !== null || secondary.suspects.has(appId)) return primary;
    if (secondary.load + 1 >= primary.load) return primary;
    return moving(p) && moving(s) ? secondary : primary;
  }

  private slotFor(appId: string): Slot {
    const slot = this.slots[fnv1a(appId) % this.slots.length];
    if (slot === undefined) throw new Error("pool has no slots");
    return slot;
  }

  private ensure(slot: Slot): Promise<Member> {
    if (slot.current !== null && !slot.current.faulted) return Promise.resolve(slot.current);
    slot.starting ??= this.spawn(slot).then(
      (member) => {
        slot.current = member;
        slot.starting = null;
        return member;
      },
      (error: unknown) => {
        slot.starting = null;
        this.onEvent({ type: "start_failed", slot: slot.index, error });
        throw error;
      },
    );
    return slot.starting;
  }

  private async spawn(slot: Slot): Promise<Member> {
    slot.starts += 1;
    const proc = await WorkerdProcess.start({ ...this.o, name: `exec-${slot.index}-${slot.starts}` });
    // Listening is not answering: a process joins the pool once the supervisor replied.
    if (!(await proc.ping(this.o.startupTimeoutMs))) {
      proc.kill();
      throw new Error(`executor process ${slot.index} listened but did not answer a ping`);
    }
    let channel: ExecutorChannel;
    try {
      channel = await this.openChannel(proc);
    } catch (error) {
      proc.kill();
      throw error;
    }
    const abort = new AbortController();
    const member: Member = {
      proc,
      channel,
      channels: new Set([channel]),
      evictions: 0,
      calls: 0,
      rotating: false,
      lastDone: performance.now(),
      abort,
      inflight: new Set(),
      isolates: new IsolateTable(),
      faulted: false,
      retiring: false,
      pinging: false,
      idleWaiters: [],
    };
    this.watch(slot, member, channel);
    // A fault fails every call waiting on the process's channels at once.
    abort.signal.addEventListener("abort", () => {
      for (const channel of member.channels) channel.fail(abort.signal.reason);
    });
    this.members.add(member);
    proc.onExit = () => {
      this.members.delete(member);
      for (const channel of member.channels) channel.close();
      if (!member.retiring && !this.closed) this.fault(slot, member, "crashed");
    };
    if (this.closed) proc.kill();
    return member;
  }

  private openChannel(proc: WorkerdProcess): Promise<ExecutorChannel> {
    return ExecutorChannel.open(proc.socketPath, this.o.bindings, this.o.startupTimeoutMs);
  }

  private watch(slot: Slot, member: Member, channel: ExecutorChannel): void {
    // The supervisor dropped the channel while the process lives on: restart it all the same.
    channel.onClose = () => {
      if (!member.retiring && !this.closed) this.fault(slot, member, "crashed");
    };
  }

  /**
   * Moves new calls to a fresh channel and closes the old one once its calls are answered.
   * The supervisor holds each isolate's session in the channel's request context, and workerd
   * frees what such a context holds only when it ends or V8 happens to collect the handles;
   * ending it now and then keeps evicted isolates from piling up (the density test measures it).
   */
  private rotate(slot: Slot, member: Member): void {
    if (member.rotating || member.faulted || member.retiring || this.closed) return;
    member.rotating = true;
    this.openChannel(member.proc).then(
      (fresh) => {
        member.rotating = false;
        // The process went down while the socket opened: nothing will use it.
        if (member.faulted || member.retiring || this.closed) {
          fresh.close();
          return;
        }
        member.channels.add(fresh);
        this.watch(slot, member, fresh);
        member.evictions = 0;
        member.calls = 0;
        const old = member.channel;
        member.channel = fresh;
        old.closeWhenIdle(() => member.channels.delete(old));
        this.onEvent({ type: "channel_rotated", slot: slot.index });
      },
      () => {
        // The process is failing; the watchdog deals with that. Calls stay on the old channel.
        member.rotating = false;
      },
    );
  }

  /** Kill, fail in-flight calls, quarantine the likely culprit, restart. */
  private fault(slot: Slot, member: Member, reason: FaultReason): void {
    // A draining process is being replaced already; its calls fail on their own if it dies.
    if (member.faulted || member.retiring) return;
    member.faulted = true;
    const suspects = [...new Set([...member.inflight].map((e) => e.appId))];
    const quarantined = suspects.length === 1 ? (suspects[0] ?? null) : null;
    if (quarantined !== null) {
      this.quarantine.add(quarantined);
      slot.suspects.delete(quarantined);
    } else for (const appId of suspects) slot.suspects.add(appId);
    const failed = member.inflight.size;
    this.failAll(member, new ExecutorFault(reason, "may_have_run", reason === "hung" ? "the executor stopped answering (a call ran away) and was restarted" : "the executor process died and was restarted"));
    member.proc.kill();
    this.onEvent({ type: "fault", slot: slot.index, reason, suspects, quarantined, failedCalls: failed });
    if (slot.current === member) slot.current = null;
    if (!this.closed) void this.ensure(slot).catch(() => undefined);
  }

  private failAll(member: Member, fault: ExecutorFault): void {
    member.abort.abort(fault);
  }

  private tick(): void {
    const now = this.clock.now();
    for (const slot of this.slots) {
      const member = slot.current;
      if (member === null || member.faulted || member.pinging) continue;
      member.pinging = true;
      void member.proc.ping(this.o.pingTimeoutMs).then((ok) => {
        member.pinging = false;
        if (!ok && !member.faulted && !member.retiring && !member.proc.exited) this.fault(slot, member, "hung");
      });
      this.evict(slot, member, this.o.maxIsolatesPerProcess, now - this.o.isolateIdleMs);
      const rss = member.proc.rssBytes();
      if (rss !== null && rss > this.o.rssHighWaterBytes) this.recycle(slot, rss);
    }
  }

  private evict(slot: Slot, member: Member, capacity: number, idleBefore: number): void {
    for (const key of member.isolates.victims(capacity, idleBefore)) {
      const done = member.channel
        .evict(key, this.o.pingTimeoutMs)
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => {
          member.isolates.evicting.delete(key);
          member.isolates.forget(key);
          if (++member.evictions >= this.o.channelRotateEvictions) this.rotate(slot, member);
        });
      member.isolates.evicting.set(key, done);
    }
  }

  /** Past the RSS high-water mark: route new calls to a fresh process, let the old one drain. */
  private recycle(slot: Slot, rss: number): void {
    if (slot.recycling || slot.current === null) return;
    slot.recycling = true;
    this.onEvent({ type: "recycle", slot: slot.index, rssBytes: rss });
    this.spawn(slot).then(
      (fresh) => {
        const old = slot.current;
        slot.current = fresh;
        slot.recycling = false;
        if (old === null) return;
        old.retiring = true;
        if (old.inflight.size === 0) old.proc.kill();
        else setTimeout(() => old.proc.kill(), this.o.drainMs).unref();
      },
      (error: unknown) => {
        slot.recycling = false;
        this.onEvent({ type: "start_failed", slot: slot.index, error });
      },
    );
  }
}

/** A hot app spills onto its second process from this many calls in flight on its first. */
const SPILL_AT = 2;
/** A process with calls in flight and none finished for this long is not spilled onto or from. */
const PROGRESS_MS = 50;

/** A process is moving when it is idle, finished a call lately, or its oldest call is young. */
function moving(m: Member): boolean {
  const now = performance.now();
  const oldest = m.inflight.values().next().value;
  return oldest === undefined || now - m.lastDone < PROGRESS_MS || now - oldest.since < PROGRESS_MS;
}

/** FNV-1a: stable across processes and restarts, unlike anything keyed on object identity. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
