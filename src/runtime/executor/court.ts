import { judge, type Evidence, type Verdict } from "./blame.ts";
import type { Quarantine } from "./quarantine.ts";
import { Trials, type Trial } from "./trials.ts";
import { ExecutorFault } from "./types.ts";
import type { Verdicts } from "./verdicts.ts";

/** What a fault came to: the verdict, and the app quarantined by it, if any. */
export interface Judgment extends Verdict {
  quarantined: string | null;
}

/** The judgment of a fault no app could have caused: nobody suspected, charged or quarantined. */
export const NO_ONE: Judgment = { suspects: [], culprit: null, sole: false, charged: new Set(), quarantined: null };

/**
 * Where the pool's judgments live: who may run (quarantine), who runs apart (suspects on trial,
 * convicts on parole) and what a fault means for each app that could have caused it. The pool
 * only reports what happened on its processes; this decides what follows.
 */
export class Court {
  private readonly trials: Trials;

  constructor(
    private readonly quarantine: Quarantine,
    private readonly verdicts: Verdicts,
    probationProcesses: number,
    /** An app that ran on a shared process this recently is a suspect when it faults. */
    private readonly windowMs: number,
  ) {
    this.trials = new Trials(probationProcesses);
  }

  /**
   * Before anything of an app runs: the refusal of a quarantined app (or account), or null. Notes
   * whose app it is, so that its convictions count against its owner too.
   */
  admit(appId: string, ownerId: string | null): ExecutorFault | null {
    this.quarantine.owner(appId, ownerId);
    const left = this.quarantine.remaining(appId, ownerId);
    if (left.ms <= 0) return null;
    const who = left.of === "owner" ? "this account's apps took executors down repeatedly and are" : "this app took executors down and is";
    return new ExecutorFault("quarantined", "not_started", `${who} quarantined for ${Math.ceil(left.ms / 1000)} s more`);
  }

  /** Ms left of the app's quarantine (or its owner's), for operators; 0 when it may run. */
  quarantineLeft(appId: string, ownerId: string | null): number {
    return this.quarantine.remaining(appId, ownerId).ms;
  }

  /** The group an app's calls run in apart from everyone else: on trial, or its own on parole. */
  trialOf(appId: string, now: number): Trial | undefined {
    const trial = this.trials.of(appId);
    if (trial !== undefined || !this.verdicts.onParole(appId)) return trial;
    return this.trials.alone(appId, now);
  }

  /**
   * A shared process faulted (`trial` null) or a probation process did. One culprit is convicted;
   * with none, a shared process's suspects go on trial and a group splits.
   */
  judge(trial: Trial | null, evidence: Evidence, now: number, untried: (appId: string) => boolean = () => false): Judgment {
    // In a probation process, only the group's apps ran, and every one that did is a suspect.
    const verdict = trial === null ? judge(evidence, this.windowMs, now) : judge({ ...evidence, ran: ranBy(evidence.ran, trial) }, Infinity, now);
    if (verdict.culprit === null) {
      if (trial === null) this.trials.accuse(verdict.suspects, now);
      else this.trials.split(trial, verdict.suspects, now);
      return { ...verdict, quarantined: null };
    }
    if (trial !== null) this.trials.dissolve(trial, verdict.culprit, now);
    return { ...verdict, quarantined: this.convict(verdict.culprit, verdict.sole, untried(verdict.culprit), now) };
  }

  /** Groups quiet for `clearMs` go back to their lanes (a convict's record keeps it apart still). */
  acquit(now: number, clearMs: number): Trial[] {
    return this.trials.acquit(now, clearMs);
  }

  private convict(appId: string, sole: boolean, untried: boolean, now: number): string | null {
    if (this.verdicts.convict(appId, sole, untried)) {
      this.trials.remove(appId);
      this.quarantine.add(appId);
      return appId;
    }
    this.trials.alone(appId, now);
    return null;
  }
}

function ranBy(ran: ReadonlyMap<string, number>, trial: Trial): Map<string, number> {
  return new Map([...ran].filter(([appId]) => trial.apps.has(appId)));
}
