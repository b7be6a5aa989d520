/**
 * Suspects and convicts on trial. When a shared workerd process hangs, crashes or burns its CPU
 * budget and the evidence points at no one app (blame.ts), every suspect leaves the shared
 * process and runs in probation processes, a group per process, where nothing else runs. A group
 * whose process faults again splits in two; a group of one is the culprit. A group that stays
 * quiet and unharmed for a while goes back. An app convicted (court.ts) runs in a group of its own
 * while on parole. So a guilty app is found in about log2(suspects) faults of its own, and an
 * innocent one loses at most the call it had in flight when its group's process went down.
 */
export interface Trial {
  readonly id: number;
  readonly apps: Set<string>;
  /** When the group was formed or last ran a call (performance.now()). */
  quietSince: number;
  inflight: number;
}

export class Trials {
  private readonly byApp = new Map<string, Trial>();
  private readonly live = new Set<Trial>();
  private nextId = 1;

  /** `capacity`: how many probation processes may run at once. */
  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.live.size;
  }

  of(appId: string): Trial | undefined {
    return this.byApp.get(appId);
  }

  /**
   * Puts the suspects of a shared process's fault on trial, spread over as many new groups as
   * there is room for; past capacity they join the smallest group there is. Apps already on
   * trial stay in their group.
   */
  accuse(suspects: Iterable<string>, now: number): void {
    const fresh = [...new Set(suspects)].filter((appId) => !this.byApp.has(appId));
    if (fresh.length === 0) return;
    const room = Math.min(fresh.length, this.capacity - this.live.size);
    const groups = room > 0 ? Array.from({ length: room }, () => this.open(now)) : [this.smallest()];
    fresh.forEach((appId, i) => this.join(groups[i % groups.length] as Trial, appId));
  }

  /** The app's own group (a convict on parole): made for it, or the smallest there is past capacity. */
  alone(appId: string, now: number): Trial {
    const current = this.byApp.get(appId);
    if (current?.apps.size === 1) return current;
    if (current !== undefined) this.leave(current, appId);
    const group = this.live.size < this.capacity ? this.open(now) : this.smallest();
    this.join(group, appId);
    return group;
  }

  /**
   * The group's own process faulted while `ran` had run there and the evidence pointed at none of
   * them: they split in two, each half in a process of its own next time one of its apps is
   * called. Apps of the group that had not run stay on trial with the first half.
   */
  split(trial: Trial, ran: readonly string[], now: number): void {
    this.close(trial);
    const suspects = ran.filter((appId) => trial.apps.has(appId));
    const idle = [...trial.apps].filter((appId) => !suspects.includes(appId));
    const half = Math.ceil(suspects.length / 2);
    this.regroup([...suspects.slice(0, half), ...idle], now);
    this.regroup(suspects.slice(half), now);
  }

  /** The group's process faulted and `culprit` was charged: the others stay on trial together. */
  dissolve(trial: Trial, culprit: string, now: number): void {
    this.close(trial);
    this.regroup([...trial.apps].filter((appId) => appId !== culprit), now);
  }

  /** Takes an app off trial (it is quarantined: its calls do not run at all). */
  remove(appId: string): void {
    const trial = this.byApp.get(appId);
    if (trial !== undefined) this.leave(trial, appId);
  }

  /** Groups with no call in flight, quiet for `clearMs`: acquitted and removed. */
  acquit(now: number, clearMs: number): Trial[] {
    const out = [...this.live].filter((t) => t.inflight === 0 && now - t.quietSince >= clearMs);
    for (const trial of out) this.close(trial);
    return out;
  }

  private regroup(apps: readonly string[], now: number): void {
    if (apps.length === 0) return;
    const group = this.open(now);
    for (const appId of apps) this.join(group, appId);
  }

  private open(now: number): Trial {
    const trial: Trial = { id: this.nextId++, apps: new Set(), quietSince: now, inflight: 0 };
    this.live.add(trial);
    return trial;
  }

  private join(trial: Trial, appId: string): void {
    trial.apps.add(appId);
    this.byApp.set(appId, trial);
  }

  private leave(trial: Trial, appId: string): void {
    trial.apps.delete(appId);
    this.byApp.delete(appId);
  }

  private close(trial: Trial): void {
    this.live.delete(trial);
    for (const appId of trial.apps) if (this.byApp.get(appId) === trial) this.byApp.delete(appId);
  }

  private smallest(): Trial {
    let best: Trial | null = null;
    for (const t of this.live) if (best === null || t.apps.size < best.apps.size) best = t;
    if (best === null) throw new Error("no trial to join: capacity is 0");
    return best;
  }
}
