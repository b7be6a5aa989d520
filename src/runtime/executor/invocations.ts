import { pooledRandomBytes } from "../../lib/random-pool.ts";
import type { WriteLease } from "../storage/index.ts";
import type { ApiError } from "../../errors/index.ts";
import type { CallLog } from "../logs/call-log.ts";
import type { Capability } from "./types.ts";

/** One op call in flight: what the internal API trusts instead of anything app code says. */
export interface Invocation {
  id: string;
  appId: string;
  revision: number;
  /** The app's secrets version as the call read it: 0, the app has never had a secret (none to read for its build). */
  secretsVersion?: number;
  op: string;
  access: "read" | "write";
  caps: ReadonlySet<Capability>;
  /** The first refusal a binding met (a write from a read op, a cap); surfaced if the op fails. */
  refusal: ApiError | null;
  /** Room in the app's cap held for this call's writes (write-behind), if any. */
  lease: WriteLease | null;
  /** Where the call's `env.LOG` lines go, with its console lines (absent: none are kept). */
  log?: CallLog;
  /** Made for an anonymous visitor of the app's custom domain: their own store's id (DECISIONS §12). */
  visitor?: string;
}

/**
 * Invocation ids minted by the control plane. They are 144-bit random, live only while their
 * call runs, and are the only thing the internal API accepts to name an app. A call is over for
 * its app's code at `end` (no binding call is answered after it), and over for the control plane
 * at `settle`, once what it records of its outcome (activity, counts, log lines) is written: a
 * deletion waiting on the app's calls (afterCalls) finds those rows there to drop.
 */
export class Invocations {
  /** Calls minted and not yet settled, with whether each has ended. */
  private readonly live = new Map<string, { invocation: Invocation; ended: boolean }>();
  /** Who waits for the last call of an app in flight to settle (afterCalls): rare, a deletion's. */
  private readonly waiting = new Map<string, (() => void)[]>();

  mint(fields: Omit<Invocation, "id" | "refusal" | "lease">): Invocation {
    const invocation: Invocation = { ...fields, id: pooledRandomBytes(18).toString("base64url"), refusal: null, lease: null };
    this.live.set(invocation.id, { invocation, ended: false });
    return invocation;
  }

  /** The call `id` names while it runs; undefined once it has ended. */
  get(id: string | undefined): Invocation | undefined {
    const entry = id === undefined ? undefined : this.live.get(id);
    return entry === undefined || entry.ended ? undefined : entry.invocation;
  }

  /** The executor answered: the call's code can reach nothing more through its id. */
  end(id: string): void {
    const entry = this.live.get(id);
    if (entry !== undefined) entry.ended = true;
  }

  /** The control plane is done with the call (after `end`); its app's deletion may go on. */
  settle(id: string): void {
    const entry = this.live.get(id);
    if (entry === undefined) return;
    this.live.delete(id);
    const { appId } = entry.invocation;
    const waiting = this.waiting.get(appId);
    if (waiting === undefined || this.inFlight(appId)) return;
    this.waiting.delete(appId);
    for (const resolve of waiting) resolve();
  }

  /**
   * Resolves once every call of `appId` in flight now has settled (its write-behind writes
   * committed with its answer, its outcome recorded); null when none is in flight.
   */
  afterCalls(appId: string): Promise<void> | null {
    if (!this.inFlight(appId)) return null;
    const waiting = this.waiting.get(appId) ?? [];
    this.waiting.set(appId, waiting);
    return new Promise((resolve) => waiting.push(resolve));
  }

  /** Whether a call of `appId` is in flight: a scan of the calls in flight, made only while someone waits. */
  private inFlight(appId: string): boolean {
    for (const { invocation } of this.live.values()) if (invocation.appId === appId) return true;
    return false;
  }
}
