/**
 * Which apps' code has proven itself here. A new app's, or a new revision's, first calls run on
 * processes of their own (the pool's `fresh` slots), beside other code in the same state, so a
 * fresh app that loops costs only apps that are as new as it is; once `callsToGraduate` of that
 * revision's calls have been answered within budget, its calls go to its lane's processes.
 * In memory per instance: after a restart every app proves itself again (a few calls each).
 */
export class FirstCalls {
  /** App id → the newest revision seen and how many of its calls were answered. */
  private readonly apps = new Map<string, { revision: number; answered: number }>();

  constructor(
    private readonly callsToGraduate: number,
    private readonly capacity = 100_000,
  ) {}

  /** Whether calls of this revision go to the lane's processes. */
  graduated(appId: string, revision: number): boolean {
    const entry = this.apps.get(appId);
    return entry !== undefined && entry.revision === revision && entry.answered >= this.callsToGraduate;
  }

  /** One call of the revision was answered; true when that made it graduate. */
  answered(appId: string, revision: number): boolean {
    let entry = this.apps.get(appId);
    if (entry === undefined || revision > entry.revision) entry = { revision, answered: 0 };
    else if (revision < entry.revision) return false;
    this.apps.delete(appId);
    this.apps.set(appId, entry);
    if (this.apps.size > this.capacity) this.apps.delete(this.apps.keys().next().value ?? appId);
    entry.answered += 1;
    return entry.answered === this.callsToGraduate;
  }
}
