// How long after the proving call's answer its warm-up on the lane begins (see promote).
const PROMOTE_AFTER_MS = 20;

/**
 * Which apps' code has proven itself here. A new app's, or a new revision's, first calls run on
 * processes of their own (the pool's `fresh` slots), beside other code in the same state, so a
 * fresh app that loops costs only apps that are as new as it is; once `callsToGraduate` of that
 * revision's calls have been answered within budget and its isolate has been built on its lane
 * (the pool warms it there at graduation: the call that came while it was being built used to
 * wait for the build, ~5 ms), its calls go to its lane's processes.
 * In memory per instance: after a restart every app proves itself again (a few calls each).
 */
export class FirstCalls {
  /** App id → the newest revision seen, how many of its calls were answered, and whether its lane has it built. */
  private readonly apps = new Map<string, { revision: number; answered: number; built: boolean }>();

  constructor(
    private readonly callsToGraduate: number,
    private readonly capacity = 100_000,
  ) {}

  /** Whether calls of this revision go to the lane's processes. */
  graduated(appId: string, revision: number): boolean {
    const entry = this.apps.get(appId);
    return entry !== undefined && entry.revision === revision && entry.answered >= this.callsToGraduate && entry.built;
  }

  /**
   * The revision has just proven itself: `warm` builds it on its lane, then its calls go there and
   * `graduated` is told. Not at once: begun as the proving call's answer went out, the warm-up's
   * first steps (reading the code) cost that answer ~2 ms (bench publish row).
   */
  promote(appId: string, revision: number, warm: () => Promise<unknown>, graduated: () => void): void {
    const built = () => {
      this.built(appId, revision);
      graduated();
    };
    setTimeout(() => void warm().then(built, built), PROMOTE_AFTER_MS).unref();
  }

  /** The revision's warm-up on its lane is over (built, or failed: its next call there reports it). */
  built(appId: string, revision: number): void {
    const entry = this.apps.get(appId);
    if (entry?.revision === revision) entry.built = true;
  }

  /**
   * Whether the app's newest code has not answered a single call yet: a fault it is certainly
   * guilty of is then its only record, and it is quarantined at once (verdicts.ts).
   */
  untried(appId: string): boolean {
    return (this.apps.get(appId)?.answered ?? 0) === 0;
  }

  /** A call or warm-up of the revision is about to run: a newer revision starts its count. */
  placed(appId: string, revision: number): void {
    this.entry(appId, revision);
  }

  /** One call of the revision was answered; true when that made it graduate. */
  answered(appId: string, revision: number): boolean {
    const entry = this.entry(appId, revision);
    if (entry === null) return false;
    entry.answered += 1;
    return entry.answered === this.callsToGraduate;
  }

  /** The app's count for `revision`, begun afresh for a newer one; null for an older one. */
  private entry(appId: string, revision: number): { revision: number; answered: number; built: boolean } | null {
    let entry = this.apps.get(appId);
    if (entry === undefined || revision > entry.revision) entry = { revision, answered: 0, built: false };
    else if (revision < entry.revision) return null;
    this.apps.delete(appId);
    this.apps.set(appId, entry);
    if (this.apps.size > this.capacity) this.apps.delete(this.apps.keys().next().value ?? appId);
    return entry;
  }
}
