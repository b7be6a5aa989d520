import type { ExecutorChannel } from "./channel.ts";
import { IsolateTable } from "./isolates.ts";
import type { WorkerdProcess } from "./process.ts";
import type { Trial } from "./trials.ts";
import { ExecutorFault, type ExecutorCall, type FaultReason, type Lane } from "./types.ts";

// What the executor pool (pool.ts) knows about each of its processes and slots, and the
// judgments its watchdog makes from that alone: the CPU budget, who is a suspect after a fault,
// whether a process is still moving, where an app's calls go.

export interface Inflight {
  appId: string;
  /** The request that asked for the call, when it came over HTTP (X-Request-Id). */
  requestId?: string;
  startedAt: number;
  /** performance.now() at the start: progress is judged in real time, whatever the clock. */
  since: number;
}

/**
 * Background work each isolate of a process left pending after its calls answered, as its shim
 * counts it (timers, fetches, ctx.waitUntil): the evidence that charges a stall after every call
 * was answered to the app whose work was still running (blame.ts).
 */
export class BackgroundWork {
  /** Isolate key → its app and its newest count. */
  private readonly isolates = new Map<string, { appId: string; pending: number; seq: number }>();

  report(key: string, appId: string, pending: number, seq: number): void {
    const known = this.isolates.get(key);
    if (known !== undefined && known.seq >= seq) return;
    if (pending > 0) this.isolates.set(key, { appId, pending, seq });
    // Kept at zero so that an older report arriving late cannot bring it back.
    else if (known !== undefined) known.pending = 0;
  }

  /** The isolate is gone (evicted, or taken over under another key). */
  forget(key: string): void {
    this.isolates.delete(key);
  }

  /** Apps with work pending. */
  apps(): Set<string> {
    const out = new Set<string>();
    for (const { appId, pending } of this.isolates.values()) if (pending > 0) out.add(appId);
    return out;
  }
}

/** A live process and what the pool knows about it. */
export interface Member {
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
  background: BackgroundWork;
  /** App id → performance.now() when it last began or ended a call here. */
  ran: Map<string, number>;
  /** performance.now() when the last ping that was answered went out. */
  healthyAt: number;
  /**
   * CPU ms at the start of the current busy stretch (see checkCpu()), and whether a call ended or
   * a live call made a binding call since (progress: the process is working, not running away).
   */
  cpuMark: number | null;
  progressed: boolean;
  faulted: boolean;
  retiring: boolean;
  pinging: boolean;
  /** CPU ms at the last tick. */
  cpuLast: number | null;
}

export interface Slot {
  /** `claimed-0`, `free-1`, `trial-7`: names processes and events. */
  name: string;
  starts: number;
  current: Member | null;
  starting: Promise<Member> | null;
  recycling: boolean;
  /** Calls placed on this slot and not yet answered, counted from placement on. */
  load: number;
  /** Set on a probation process: the suspects it runs, and nothing else. */
  trial: Trial | null;
  /** How many isolates its process keeps before it evicts the least recently used. */
  capacity: number;
}

export const newSlot = (name: string, capacity: number, trial: Trial | null = null): Slot => ({ name, starts: 0, current: null, starting: null, recycling: false, load: 0, trial, capacity });

/**
 * A process busy (over half of each tick on the CPU) for `cpuBudgetMs` of CPU time with no
 * progress (no call finishing, no binding call from a call still running) is running something
 * away, in slices too short for the ping to notice or in the background after a call answered.
 * An honest op that loops over its data makes binding calls all along: it is working, however
 * long it keeps the process busy, and its own deadline still bounds it. Reads the process's CPU
 * time once per watchdog tick.
 */
export function overCpuBudget(member: Member, o: { pingIntervalMs: number; cpuBudgetMs: number }): boolean {
  const cpu = member.proc.cpuMs();
  if (cpu === null) return false;
  const last = member.cpuLast;
  member.cpuLast = cpu;
  if (last === null) return false;
  if (cpu - last < o.pingIntervalMs / 2 || member.progressed) {
    member.cpuMark = null;
    member.progressed = false;
    return false;
  }
  member.cpuMark ??= last;
  return cpu - member.cpuMark >= o.cpuBudgetMs;
}

/** A call this slow may have filled the process's memory: its RSS is read before it answers. */
export const SLOW_CALL_MS = 50;

/** A hot app spills onto its second process from this many calls in flight on its first. */
const SPILL_AT = 2;
/** A process with calls in flight and none finished for this long is not spilled onto or from. */
const PROGRESS_MS = 50;

/** A process is moving when it is idle, finished a call lately, or its oldest call is young. */
export function moving(m: Member): boolean {
  const now = performance.now();
  const oldest = m.inflight.values().next().value;
  return oldest === undefined || now - m.lastDone < PROGRESS_MS || now - oldest.since < PROGRESS_MS;
}

/**
 * The app's own slot of its lane or, while that process is busy, a second one its id also hashes
 * to (two choices): a hot app then gets the threads of two processes, and its isolate is loaded
 * in both. Only between processes whose calls keep finishing: one that stopped may be held by a
 * runaway, and spilling onto it, or away from a process it blocks, would spread the damage.
 */
export function placeFor(slots: readonly Slot[], appId: string): Slot {
  const primary = slotFor(slots, appId);
  const p = primary.current;
  if (slots.length < 2 || p === null || primary.load < SPILL_AT) return primary;
  const index = fnv1a(appId) % slots.length;
  const secondary = slots[(index + 1 + (fnv1a(`${appId}#2`) % (slots.length - 1))) % slots.length];
  const s = secondary?.current ?? null;
  if (secondary === undefined || s === null || s.faulted) return primary;
  if (secondary.load + 1 >= primary.load) return primary;
  return moving(p) && moving(s) ? secondary : primary;
}

/** The app's own slot of its lane. */
export function slotFor(slots: readonly Slot[], appId: string): Slot {
  const slot = slots[fnv1a(appId) % slots.length];
  if (slot === undefined) throw new Error("pool has no slots");
  return slot;
}

/** FNV-1a: stable across processes and restarts, unlike anything keyed on object identity. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** A process just started, with its first channel; a fault fails every call waiting on its channels at once. */
export function newMember(proc: WorkerdProcess, channel: ExecutorChannel): Member {
  const abort = new AbortController();
  const member: Member = {
    background: new BackgroundWork(),
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
    ran: new Map(),
    healthyAt: performance.now(),
    cpuMark: null,
    progressed: false,
    faulted: false,
    retiring: false,
    pinging: false,
    cpuLast: null,
  };
  abort.signal.addEventListener("abort", () => {
    for (const open of member.channels) open.fail(abort.signal.reason);
  });
  return member;
}

/** What a process's channel tells the pool: its close (a fault), binding calls (progress), background work. */
export function watchChannel(member: Member, channel: ExecutorChannel, on: { fault: () => void; live: (invocation: string) => boolean }): void {
  // The supervisor dropped the channel while the process lives on: restart it all the same.
  channel.onClose = on.fault;
  // A binding call of a call still running: its code is yielding, so the process is working.
  // (A finished invocation's calls are refused, and a loop of refusals is no progress.)
  channel.onBinding = (invocation) => {
    if (on.live(invocation)) member.progressed = true;
  };
  channel.onBackground = (key, appId, pending, seq) => member.background.report(key, appId, pending, seq);
}

export const FAULT_MESSAGES: Partial<Record<FaultReason, string>> = {
  hung: "the executor stopped answering (a call ran away) and was restarted",
  cpu: "the executor ran past its CPU budget (a call or its background work ran away) and was restarted",
  memory: "the executor passed its memory ceiling and was restarted",
};

/** Lane slots named `${prefix}claimed-0` …; a free lane of 0 shares the claimed one. */
export function lanesOf(prefix: string, size: number, freeSize: number, capacity: number): Record<Lane, Slot[]> {
  const claimed = Array.from({ length: size }, (_, i) => newSlot(`${prefix}claimed-${i}`, capacity));
  return { claimed, free: freeSize === 0 ? claimed : Array.from({ length: freeSize }, (_, i) => newSlot(`${prefix}free-${i}`, capacity)) };
}

const RETRIED_FAULTS: ReadonlySet<FaultReason> = new Set(["crashed", "hung", "cpu", "memory"]);

/** A read op's call failed with a process that someone else's fault took down: worth one more try. */
export function caughtIn(call: ExecutorCall, error: unknown): boolean {
  if (call.access !== "read" || call.warm === true || !(error instanceof ExecutorFault)) return false;
  return error.execution === "may_have_run" && RETRIED_FAULTS.has(error.reason) && error.charged !== undefined && !error.charged.has(call.appId);
}

/** Live processes by what they run (a lane, `fresh`, `trial`), and the isolates they hold. */
export function censusOf(slots: readonly Slot[]): { processes: Record<string, number>; isolates: number } {
  const processes: Record<string, number> = {};
  let isolates = 0;
  for (const slot of slots) {
    const member = slot.current;
    if (member === null || member.faulted) continue;
    const kind = slot.trial !== null ? "trial" : slot.name.replace(/-\d+$/, "");
    processes[kind] = (processes[kind] ?? 0) + 1;
    isolates += member.isolates.size;
  }
  return { processes, isolates };
}
