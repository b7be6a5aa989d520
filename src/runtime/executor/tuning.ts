/** Knobs with production defaults; tests shorten the timers. */
export interface ExecutorTuning {
  compatibilityDate: string;
  maxOldSpaceMb: number;
  startupTimeoutMs: number;
  pingIntervalMs: number;
  /** A process that leaves a ping unanswered this long is hung. */
  pingTimeoutMs: number;
  /** CPU a call and the work it leaves behind may use in one busy stretch (pool.ts checkCpu()). */
  cpuBudgetMs: number;
  /** Hard ceiling per process: the kernel's limit where it lets us set one, and the RSS watchdog. */
  memoryMaxBytes: number;
  /** An app that ran in a process this recently is a suspect when it faults (blame.ts). */
  backgroundWindowMs: number;
  /** A group on trial that stays quiet and unharmed this long is acquitted. */
  probationMs: number;
  /** At most this many probation processes at once; more suspects share them. */
  probationProcesses: number;
  /** Calls of a new revision answered within budget before its calls leave the fresh processes. */
  callsToGraduate: number;
  /** A conviction keeps an app apart this long; a second one within it quarantines the app (verdicts.ts). */
  convictionWindowMs: number;
  quarantineMs: number;
  maxIsolatesPerProcess: number;
  /** The same for a process of first calls (FirstCalls), whose isolates serve a few calls each. */
  maxIsolatesPerFreshProcess: number;
  isolateIdleMs: number;
  /** Isolates a tick evicts per process while the table has room (idle or superseded); past capacity, as many as needed. */
  evictionsPerTick: number;
  rssHighWaterBytes: number;
  /** How long a recycled process may finish its calls before it is killed anyway. */
  drainMs: number;
  /** A process's channel is replaced after this many isolate evictions or calls (pool.ts rotate()). */
  channelRotateEvictions: number;
  channelRotateCalls: number;
  /** An app isolate collects its garbage after this many calls, this long after its last collection (workers/gc.worker.js). */
  gcEveryCalls: number;
  gcMinIntervalMs: number;
}

export const DEFAULT_TUNING: ExecutorTuning = {
  compatibilityDate: "2025-09-01",
  maxOldSpaceMb: 256,
  startupTimeoutMs: 15_000,
  pingIntervalMs: 250,
  // A call may hold the thread this long before its process counts as hung and is killed.
  pingTimeoutMs: 1_000,
  cpuBudgetMs: 1_000,
  memoryMaxBytes: 1536 * 1024 * 1024,
  backgroundWindowMs: 10_000,
  probationMs: 5_000,
  probationProcesses: 4,
  callsToGraduate: 3,
  convictionWindowMs: 60 * 60_000,
  quarantineMs: 5 * 60_000,
  // A small app's isolate holds 2.1–2.8 MiB of a process's RSS (the bench's Zipf row; more in a
  // process that has run many calls before): two lane processes at 220, a fresh one at 40 and two
  // idle ones keep the executors under the 1.5 GiB the issue sets for 5,000 apps (at 300 each
  // they reached 1.9–2.0 GiB; at 240 and 60, 1.49 GiB in a full bench run).
  maxIsolatesPerProcess: 220,
  // A fresh process's isolate serves its revision's first calls only, and is dropped when they
  // graduate; what it keeps is code still proving itself. At the lanes' count its process filled
  // with one-call apps of the long tail, a third of the executors' RSS.
  maxIsolatesPerFreshProcess: 40,
  isolateIdleMs: 10 * 60_000,
  // An eviction holds its process ~0.5–1 ms here, and every call there waits: a tick that evicted
  // 25 at once stalled a call 10–22 ms. Two a tick (8 a second) spread them out.
  evictionsPerTick: 2,
  rssHighWaterBytes: 1024 * 1024 * 1024,
  drainMs: 35_000,
  channelRotateEvictions: 32,
  channelRotateCalls: 100_000,
  // A collection stops the process: ~1–2 ms for a small heap, ~120 ms for 100 MiB of live
  // objects. 2 s bounds what one app's big heap costs its neighbours (~6 % at 100 MiB).
  gcEveryCalls: 1000,
  gcMinIntervalMs: 2000,
};

/** The pool's share of the executor's tuning (see ExecutorTuning for what each knob means). */
export type PoolTuning = Pick<
  ExecutorTuning,
  | "pingIntervalMs"
  | "pingTimeoutMs"
  | "cpuBudgetMs"
  | "memoryMaxBytes"
  | "backgroundWindowMs"
  | "probationMs"
  | "probationProcesses"
  | "callsToGraduate"
  | "convictionWindowMs"
  | "maxIsolatesPerProcess"
  | "maxIsolatesPerFreshProcess"
  | "isolateIdleMs"
  | "evictionsPerTick"
  | "rssHighWaterBytes"
  | "drainMs"
  | "channelRotateEvictions"
  | "channelRotateCalls"
>;
