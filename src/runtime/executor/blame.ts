/**
 * Who brought a workerd process down. Nothing outside the process can see which isolate held its
 * thread, so the pool judges from what it saw: the calls in flight and when each was sent, the
 * background work each app's shim reported pending, which apps ran there lately, and when the
 * process last answered a ping. The verdict decides who is charged with the fault (convicted or
 * put on trial) and whose calls were only caught in it (their reads are retried).
 */

/** What the pool knew of a process when it faulted. */
export interface Evidence {
  /** Calls in flight: the app and when the call was sent (performance.now()). */
  inflight: readonly { appId: string; since: number }[];
  /** App id → when it last began or ended a call there. */
  ran: ReadonlyMap<string, number>;
  /** Apps whose shim reported timers or `ctx.waitUntil` work still pending after their answer. */
  background: ReadonlySet<string>;
  /** When the last ping the process answered was sent: it was not stuck after that. */
  healthyAt: number;
}

export interface Verdict {
  /** Every app whose code may have been running there. */
  suspects: string[];
  /** The app the evidence points at, when it points at exactly one. */
  culprit: string | null;
  /** The culprit was the only app whose code could have been running: certain, not likely. */
  sole: boolean;
  /** Apps charged with the fault: the culprit, or every suspect when there is none. */
  charged: ReadonlySet<string>;
}

/**
 * Suspects are the apps in flight, with work pending, or that ran since the last good ping or
 * within `windowMs` (work they left behind that the shim could not see); when none did, every app
 * the process ran. One suspect is the culprit, for certain. Otherwise the evidence points at:
 *
 * - apps with background work pending, and apps whose call was in flight while the process still
 *   answered pings (it had its turn and never finished); calls sent after that are stuck behind
 *   whoever holds the thread, and are its victims, not suspects;
 * - when that is nobody: the earliest call in flight, which took the thread before the calls
 *   queued after it.
 *
 * Pointing at one app is likely, not certain (an app can run work its shim does not see), so the
 * pool only isolates such a culprit; quarantine needs a certain verdict too (verdicts.ts).
 */
export function judge(evidence: Evidence, windowMs: number, now: number): Verdict {
  const { inflight, ran, background, healthyAt } = evidence;
  const suspectSet = new Set([...inflight.map((c) => c.appId), ...background]);
  for (const [appId, at] of ran) if (at >= healthyAt || now - at <= windowMs) suspectSet.add(appId);
  const suspects = suspectSet.size > 0 ? [...suspectSet] : [...ran.keys()];
  if (suspects.length === 1) return verdict(suspects, suspects[0] ?? null, true);
  const likely = new Set([...background, ...inflight.filter((c) => c.since <= healthyAt).map((c) => c.appId)]);
  if (likely.size === 0) {
    const first = [...inflight].sort((a, b) => a.since - b.since)[0];
    if (first !== undefined) likely.add(first.appId);
  }
  return verdict(suspects, likely.size === 1 ? ([...likely][0] ?? null) : null, false);
}

function verdict(suspects: string[], culprit: string | null, sole: boolean): Verdict {
  return { suspects, culprit, sole: sole && culprit !== null, charged: new Set(culprit === null ? suspects : [culprit]) };
}
