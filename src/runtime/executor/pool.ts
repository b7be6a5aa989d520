import type { Clock } from "../../config/clock.ts";
import { ChannelError, ExecutorChannel } from "./channel.ts";
import type { PoolTuning } from "./tuning.ts";
import type { BindingCall, BindingReply } from "./internal-api/bindings.ts";
import type { CodeBundle } from "./internal-api/code-cache.ts";
import { buildOf, isolateKey } from "./isolates.ts";
import type { MemoryCeiling } from "./memory-ceiling.ts";
import { WorkerdProcess, type ProcessOptions } from "./process.ts";
import { Court, NO_ONE } from "./court.ts";
import { FirstCalls } from "./first-calls.ts";
import type { Quarantine } from "./quarantine.ts";
import type { Trial } from "./trials.ts";
import { ExecutorFault, type ExecutorCall, type ExecutorOutcome, type FaultReason, type Lane, type PoolEvent } from "./types.ts";
import { Verdicts } from "./verdicts.ts";
import { caughtIn, censusOf, FAULT_MESSAGES, lanesOf, newMember, newSlot, overCpuBudget, placeFor, slotFor, SLOW_CALL_MS, watchChannel, type Inflight, type Member, type Slot } from "./pool-members.ts";

export interface PoolOptions extends Omit<ProcessOptions, "name">, PoolTuning {
  /** Processes per lane; a free lane of 0 runs free apps with the claimed ones. */
  size: number;
  freeSize: number;
  /** Processes per lane for apps' first calls of new code (FirstCalls); 0 runs them in the lane. */
  newSize: number;
  /** Whether an invocation is still running: only its binding calls count as progress. */
  live: (invocation: string) => boolean;
  /** The kernel's per-process memory limit, where this host lets us set one. */
  ceiling: MemoryCeiling | null;
  /** Answers the binding calls (env.KV …) that come back over each process's channel. */
  bindings: (call: BindingCall) => Promise<BindingReply>;
}

/**
 * Two lanes of workerd processes: claimed apps in one, free (unclaimed) apps in the other, so
 * nothing an anonymous app does reaches a claimed one; each lane has `fresh` processes of its own
 * for the first calls of new code (FirstCalls), so a new app that loops reaches only apps as new
 * as it is. Within a lane each app goes to a process by a stable hash of its id. A watchdog pings
 * every process and reads its CPU time and RSS: one that stops answering for `pingTimeoutMs`,
 * stays busy for `cpuBudgetMs` without progress, passes `memoryMaxBytes` or exits is killed and
 * restarted, and its in-flight calls fail. Which isolate did it cannot be seen from outside a
 * process: the court (court.ts) judges from what the pool saw, and a read op caught in someone
 * else's fault runs once more on a fresh process.
 */
export class ExecutorPool {
  private readonly lanes: Record<Lane, Slot[]>;
  /** First calls of new code, per lane; null when they run in the lane (`newSize` 0). */
  private readonly fresh: Record<Lane, Slot[]> | null;
  private readonly court: Court;
  private readonly firstCalls: FirstCalls;
  private readonly trialSlots = new Map<Trial, Slot>();
  /** Every live process, draining ones included, so close() can kill them all. */
  private readonly members = new Set<Member>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  onEvent: (event: PoolEvent) => void = () => undefined;

  constructor(
    private readonly o: PoolOptions,
    private readonly clock: Clock,
    quarantine: Quarantine,
    private readonly bundle: (appId: string, revision: number, secretsVersion: number) => Promise<CodeBundle | null>,
  ) {
    this.lanes = lanesOf("", o.size, o.freeSize, o.maxIsolatesPerProcess);
    this.fresh = o.newSize === 0 ? null : lanesOf("new-", o.newSize, o.freeSize === 0 ? 0 : o.newSize, o.maxIsolatesPerFreshProcess);
    this.court = new Court(quarantine, new Verdicts(clock, o.convictionWindowMs), o.probationProcesses, o.backgroundWindowMs);
    this.firstCalls = new FirstCalls(o.callsToGraduate);
  }

  /** Every lane slot, fresh slot and probation slot. */
  private get slots(): Slot[] {
    const distinct = (lanes: Record<Lane, Slot[]>) => (lanes.free === lanes.claimed ? lanes.claimed : [...lanes.claimed, ...lanes.free]);
    return [...distinct(this.lanes), ...(this.fresh === null ? [] : distinct(this.fresh)), ...this.trialSlots.values()];
  }

  async start(): Promise<void> {
    await Promise.all(this.slots.map((slot) => this.ensure(slot)));
    this.timer = setInterval(() => this.tick(), this.o.pingIntervalMs);
    this.timer.unref();
  }
  /**
   * True when every lane has its processes live or coming back. A process restarting after a
   * fault is the pool working as meant: were that "unhealthy", any anonymous app could make a
   * supervisor restart the whole service by hanging its own process.
   */
  healthy(): boolean {
    return !this.closed && this.slots.every((s) => s.trial !== null || s.starting !== null || (s.current !== null && !s.current.faulted));
  }

  /**
   * Runs a call where its app belongs (placement()). A read op whose process was killed for a
   * fault charged to other apps runs once more, on whatever process it is placed on now: it
   * changed nothing (DECISIONS §4: `access: "read"`), and it was only caught in someone's fault.
   */
  async invoke(call: ExecutorCall): Promise<ExecutorOutcome> {
    const startedAt = performance.now();
    try {
      return await this.attempt(call);
    } catch (error) {
      if (!caughtIn(call, error)) throw error;
      const left = call.deadlineMs === undefined ? undefined : Math.max(1, call.deadlineMs - (performance.now() - startedAt));
      return this.attempt({ ...call, ...(left === undefined ? {} : { deadlineMs: left }) });
    }
  }

  private async attempt(call: ExecutorCall): Promise<ExecutorOutcome> {
    if (this.closed) throw new ExecutorFault("shutting_down", "not_started", "the executor is shutting down");
    const refusal = this.court.admit(call.appId, call.ownerId ?? null);
    if (refusal !== null) throw refusal;
    const { slot, trial } = this.placement(call);
    if (call.staged === undefined) this.firstCalls.placed(call.appId, call.revision);
    // A warm-up is not load: a call that came while its app's isolate is being built (by one
    // warm-up or, staged then adopted, two) waits for that build rather than spill onto a
    // process that would build it all over again.
    const load = call.warm === true ? 0 : 1;
    slot.load += load;
    if (trial !== undefined) trial.inflight += 1;
    try {
      return await this.run(slot, call);
    } finally {
      slot.load -= load;
      if (trial !== undefined) {
        trial.inflight -= 1;
        trial.quietSince = performance.now();
      }
    }
  }

  /**
   * Where a call runs: its app's trial group, or a group of its own while on parole (court.ts);
   * the fresh processes while its code has not proven itself (FirstCalls); else its lane's.
   */
  private placement(call: Pick<ExecutorCall, "appId" | "revision" | "lane" | "staged" | "graduating">): { slot: Slot; trial: Trial | undefined } {
    const trial = this.court.trialOf(call.appId, performance.now());
    if (trial !== undefined) return { slot: this.trialSlot(trial), trial };
    const proven = call.staged === undefined && (call.graduating === true || this.firstCalls.graduated(call.appId, call.revision));
    const lanes = this.fresh === null || proven ? this.lanes : this.fresh;
    return { slot: placeFor(lanes[call.lane ?? "claimed"], call.appId), trial };
  }

  /** After a call of new code answered within budget: its app may have proven itself, and then moves to its lane (FirstCalls.promote). */
  private answered(call: ExecutorCall): void {
    if (call.warm === true || call.staged !== undefined || !this.firstCalls.answered(call.appId, call.revision) || this.fresh === null) return;
    const { allowance: _, access: __, ...isolate } = call;
    const warm = () => this.invoke({ ...isolate, op: "", headers: {}, body: "", warm: true, graduating: true });
    this.firstCalls.promote(call.appId, call.revision, warm, () => {
      // Its calls go to the lane from now on: the fresh process's build of it only takes room.
      const key = isolateKey(call);
      for (const slot of this.fresh?.[call.lane ?? "claimed"] ?? []) slot.current?.isolates.retire(key);
      this.onEvent({ type: "graduated", appId: call.appId, revision: call.revision });
    });
  }

  private trialSlot(trial: Trial): Slot {
    let slot = this.trialSlots.get(trial);
    if (slot === undefined) this.trialSlots.set(trial, (slot = newSlot(`trial-${trial.id}`, this.o.maxIsolatesPerProcess, trial)));
    return slot;
  }

  private async run(slot: Slot, call: ExecutorCall): Promise<ExecutorOutcome> {
    let member: Member;
    try {
      member = await this.ensure(slot);
    } catch {
      throw new ExecutorFault("unavailable", "not_started", "no executor process is available");
    }
    const key = call.staged?.key ?? isolateKey(call);
    await member.isolates.evicting.get(key);
    // A staged isolate of this very code, still here and not on its way out, is taken over as it
    // is (built or still building); the supervisor renames it. Anywhere else it is left to idle out.
    const adopt = call.adopt !== undefined && member.isolates.has(call.adopt) && !member.isolates.evicting.has(call.adopt) && !member.isolates.has(key) ? call.adopt : null;
    if (adopt !== null) {
      member.isolates.forget(adopt);
      member.background.forget(adopt);
    }
    // First call of this isolate in this process: send the code along, saving the supervisor a
    // round trip to the internal API. (If it is missing, the supervisor still asks for it.)
    const code = call.staged?.code ?? (adopt !== null || member.isolates.has(key) ? null : await this.bundle(call.appId, call.revision, call.secretsVersion).catch(() => null));
    const entry: Inflight = { appId: call.appId, startedAt: this.clock.now(), since: performance.now(), ...(call.requestId === undefined ? {} : { requestId: call.requestId }) };
    member.inflight.add(entry);
    member.ran.set(call.appId, entry.since);
    member.isolates.begin(key, entry.startedAt, buildOf(call));
    // Isolates this call's build supersedes go at the next tick unless room is needed now: torn
    // down here, beside the new revision's first call, they cost that call ~1 ms (bench first-call p50).
    if (member.isolates.size > slot.capacity) this.evict(slot, member, slot.capacity, 0);
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
        ...(call.warm === true ? { warm: true } : {}),
        ...(adopt === null ? {} : { adopt }),
      };
      if (++member.calls >= this.o.channelRotateCalls) this.rotate(slot, member);
      const outcome = await member.channel.run(run, call.deadlineMs);
      // Where no cgroup holds the ceiling, the watchdog looks only every tick; a call that took
      // long enough to fill memory is checked before its answer goes out.
      if (performance.now() - entry.since > SLOW_CALL_MS && (member.proc.rssBytes() ?? 0) > this.o.memoryMaxBytes) {
        this.fault(slot, member, "memory");
        throw member.abort.signal.reason;
      }
      this.answered(call);
      return outcome;
    } catch (error) {
      const reason: unknown = member.abort.signal.reason;
      if (reason instanceof ExecutorFault) throw reason;
      // The channel's own verdict on this one call (its code could not be read): the process is fine.
      if (error instanceof ExecutorFault) throw error;
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
      member.ran.set(call.appId, member.lastDone);
      member.progressed = true;
      member.isolates.end(key);
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

  /** Ms left of the app's quarantine on this instance (it is per instance), for /admin; 0 when none. */
  quarantineLeft(appId: string, ownerId: string | null): number {
    return this.court.quarantineLeft(appId, ownerId);
  }

  /** Live processes by what they run, and the isolates they hold (the metrics read it at each scrape). */
  census(): { processes: Record<string, number>; isolates: number } {
    return censusOf(this.slots);
  }

  /** Total RSS of the live processes, for tests and the density bound. */
  rssBytes(): number {
    return this.slots.reduce((sum, s) => sum + (s.current?.proc.rssBytes() ?? 0), 0);
  }

  /** A committed write to (app, key) for every process's KV read cache (channel.ts); null key: all the app's keys. */
  invalidate(appId: string, key: string | null, epoch: number): void {
    for (const member of this.members) for (const channel of member.channels) channel.invalidate(appId, key, epoch);
  }

  /** Whether an app ran on some process lately (within the isolate idle time). */
  ranLately(appId: string): boolean {
    return this.slots.some((slot) => slot.current?.ran.has(appId) === true);
  }

  /** Process ids of the live processes (the benchmark reads their CPU time). */
  pids(): number[] {
    return this.slots.flatMap((s) => (s.current?.proc.pid === undefined ? [] : [s.current.proc.pid]));
  }

  /** The live process the app's next call of `revision` goes to, barring a spill (tests kill it to prove restarts). */
  processOf(appId: string, lane: Lane = "claimed", revision?: number): WorkerdProcess | null {
    const trial = this.court.trialOf(appId, performance.now());
    if (trial !== undefined) return this.trialSlots.get(trial)?.current?.proc ?? null;
    const proven = revision === undefined || this.firstCalls.graduated(appId, revision);
    return slotFor((this.fresh === null || proven ? this.lanes : this.fresh)[lane], appId).current?.proc ?? null;
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
        this.onEvent({ type: "start_failed", slot: slot.name, error });
        throw error;
      },
    );
    return slot.starting;
  }

  private async spawn(slot: Slot): Promise<Member> {
    slot.starts += 1;
    const name = `exec-${slot.name}-${slot.starts}`;
    const proc = await WorkerdProcess.start({ ...this.o, name });
    if (proc.pid !== undefined) await this.o.ceiling?.confine(name, proc.pid, this.o.memoryMaxBytes);
    // Listening is not answering: a process joins the pool once the supervisor replied.
    if (!(await proc.ping(this.o.startupTimeoutMs))) {
      proc.kill();
      throw new Error(`executor process ${name} listened but did not answer a ping`);
    }
    let channel: ExecutorChannel;
    try {
      channel = await this.openChannel(proc);
    } catch (error) {
      proc.kill();
      throw error;
    }
    const member = newMember(proc, channel);
    this.watch(slot, member, channel);
    this.members.add(member);
    proc.onExit = () => {
      this.members.delete(member);
      for (const channel of member.channels) channel.close();
      // Read before its group goes; not again once its channel's drop faulted it.
      const reason = this.closed || member.faulted ? null : this.death(proc);
      this.o.ceiling?.release(name);
      if (reason !== null) this.fault(slot, member, reason);
    };
    if (this.closed) proc.kill();
    return member;
  }

  private openChannel(proc: WorkerdProcess): Promise<ExecutorChannel> {
    return ExecutorChannel.open(proc.socketPath, this.o.bindings, this.o.startupTimeoutMs);
  }

  private watch(slot: Slot, member: Member, channel: ExecutorChannel): void {
    watchChannel(member, channel, { fault: () => !this.closed && !member.faulted && this.fault(slot, member, this.death(member.proc)), live: this.o.live });
  }

  /**
   * A process gone: killed by the kernel at its memory ceiling (counted before it dies), or crashed.
   * Asked on its channel's drop as on its exit, as the drop usually comes first.
   */
  private death(proc: WorkerdProcess): FaultReason {
    return this.o.ceiling?.oomKilled(proc.name) === true ? "memory" : "crashed";
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
        this.onEvent({ type: "channel_rotated", slot: slot.name });
      },
      () => {
        // The process is failing; the watchdog deals with that. Calls stay on the old channel.
        member.rotating = false;
      },
    );
  }

  /**
   * Kill, fail in-flight calls, restart. The court judges who caused it from what this process
   * showed (blame.ts); calls of apps not charged with it may be retried (invoke()).
   */
  private fault(slot: Slot, member: Member, reason: FaultReason): void {
    // A draining process that dies idle, or that we killed, is no fault. One that dies with calls
    // in flight is: a process past the RSS mark is recycled, and the app filling it must not
    // escape blame because its process was already being replaced.
    if (member.faulted || (member.retiring && (member.inflight.size === 0 || member.proc.killed))) return;
    member.faulted = true;
    const evidence = { inflight: [...member.inflight], ran: member.ran, background: member.background.apps(), healthyAt: member.healthyAt };
    // A process lost with its launcher (launch.ts) ended through no app's doing: no one is charged.
    const judgment = member.proc.orphaned() ? NO_ONE : this.court.judge(slot.trial, evidence, performance.now(), (appId) => this.firstCalls.untried(appId));
    if (slot.trial !== null) this.trialSlots.delete(slot.trial);
    const failed = member.inflight.size;
    const requests = [...member.inflight].flatMap((call) => (call.requestId === undefined ? [] : [call.requestId]));
    this.failAll(member, new ExecutorFault(reason, "may_have_run", FAULT_MESSAGES[reason] ?? "the executor process died and was restarted", judgment.charged));
    member.proc.kill();
    const { suspects, culprit, sole, quarantined } = judgment;
    this.onEvent({ type: "fault", slot: slot.name, reason, suspects, culprit, sole, quarantined, failedCalls: failed, requests });
    if (slot.current === member) slot.current = null;
    // A probation process is not restarted: its group's next call starts a process of its own.
    if (!this.closed && slot.trial === null) void this.ensure(slot).catch(() => undefined);
  }

  private failAll(member: Member, fault: ExecutorFault): void {
    member.abort.abort(fault);
  }

  private tick(): void {
    const now = this.clock.now();
    const real = performance.now();
    for (const trial of this.court.acquit(real, this.o.probationMs)) {
      const slot = this.trialSlots.get(trial);
      this.trialSlots.delete(trial);
      this.onEvent({ type: "acquitted", slot: slot?.name ?? `trial-${trial.id}`, apps: [...trial.apps] });
      const member = slot?.current;
      if (member !== undefined && member !== null) {
        member.retiring = true;
        member.proc.kill();
      }
    }
    for (const slot of this.slots) {
      const member = slot.current;
      if (member === null || member.faulted) continue;
      this.ping(slot, member);
      if (this.checkCpu(slot, member)) continue;
      this.evict(slot, member, slot.capacity, now - this.o.isolateIdleMs, this.o.evictionsPerTick);
      for (const [appId, at] of member.ran) if (real - at > this.o.isolateIdleMs) member.ran.delete(appId);
      const rss = member.proc.rssBytes();
      if (rss !== null && rss > this.o.memoryMaxBytes) this.fault(slot, member, "memory");
      else if (rss !== null && rss > this.o.rssHighWaterBytes && slot.trial === null) this.recycle(slot, rss);
    }
  }

  private ping(slot: Slot, member: Member): void {
    if (member.pinging) return;
    member.pinging = true;
    const sentAt = performance.now();
    void member.proc.ping(this.o.pingTimeoutMs).then((ok) => {
      member.pinging = false;
      if (ok) member.healthyAt = sentAt;
      // A process killed or crashed fails its ping at once: its exit names it `crashed`.
      else if (!member.faulted && !member.retiring && !member.proc.gone()) this.fault(slot, member, "hung");
    });
  }

  /** The CPU budget (see overCpuBudget); returns true when it faulted the process. */
  private checkCpu(slot: Slot, member: Member): boolean {
    if (!overCpuBudget(member, this.o)) return false;
    this.fault(slot, member, "cpu");
    return true;
  }

  /** Evicts what `IsolateTable.victims` names: past `capacity` all it takes, otherwise at most `atMost`. */
  private evict(slot: Slot, member: Member, capacity: number, idleBefore: number, atMost = 0): void {
    for (const key of member.isolates.victims(capacity, idleBefore, atMost)) {
      const done = member.channel
        .evict(key, this.o.pingTimeoutMs)
        .catch(() => undefined)
        .finally(() => {
          member.isolates.evicting.delete(key);
          member.isolates.forget(key);
          member.background.forget(key);
          this.onEvent({ type: "evicted", slot: slot.name, key });
          if (++member.evictions >= this.o.channelRotateEvictions) this.rotate(slot, member);
        });
      member.isolates.evicting.set(key, done);
    }
  }

  /** Past the RSS high-water mark: route new calls to a fresh process, let the old one drain. */
  private recycle(slot: Slot, rss: number): void {
    if (slot.recycling || slot.current === null) return;
    slot.recycling = true;
    this.onEvent({ type: "recycle", slot: slot.name, rssBytes: rss });
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
        this.onEvent({ type: "start_failed", slot: slot.name, error });
      },
    );
  }
}
