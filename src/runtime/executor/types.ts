
/** Capability strings a manifest may import, and the env names they become (DECISIONS §4). */
export const CAPABILITIES = {
  "svc:storage/kv@1.0": "kv",
  "svc:storage/blob@1.0": "blob",
  "svc:logging/emit@1.0": "log",
} as const;

export type Capability = (typeof CAPABILITIES)[keyof typeof CAPABILITIES];

export function capabilitiesOf(imports: readonly string[] | undefined): Capability[] {
  const out = new Set<Capability>();
  for (const name of imports ?? []) {
    const cap = (CAPABILITIES as Record<string, Capability | undefined>)[name];
    if (cap !== undefined) out.add(cap);
  }
  return [...out].sort();
}

/** One declared operation of a manifest (DECISIONS §3). */
export interface RouteSpec {
  title?: string | null;
  description?: string | null;
  access?: "read" | "write";
  input?: unknown;
  output?: unknown;
}

/** What an isolate is built from: the module, its env strings (secrets), and what egress needs. */
export interface CodeBundle {
  appId: string;
  module: string;
  nodeCompat: boolean;
  /** The origins the app declared; the supervisor's Egress entrypoint allows only these. */
  origins: string[];
  vars: Record<string, string>;
}

/** What the executor needs of one app revision. */
export interface AppCode {
  module: string;
  /** The module imports `node:` built-ins: its isolate runs with workerd's nodejs_compat. */
  nodeCompat?: boolean;
  imports: string[];
  /** Exact `https://host[:port]` origins the app may fetch (manifest.capabilities.origins). */
  origins: string[];
  routes: Record<string, RouteSpec>;
}

/**
 * Where the executor gets source for (app, revision). The apps service implements it; the
 * executor caches answers per revision, since a revision's source never changes.
 */
export interface CodeSource {
  load(appId: string, revision: number): Promise<AppCode | null>;
}

/** One op call as the executor sends it to workerd. */
export interface ExecutorCall {
  appId: string;
  revision: number;
  /** Bumped when the app's secrets change, so the next call gets a fresh isolate (issue 5). */
  secretsVersion: number;
  caps: readonly Capability[];
  op: string;
  /** The `x-svc-*` headers of DECISIONS §4, invocation id included. */
  headers: Record<string, string>;
  body: string;
  /** Claimed when omitted. */
  lane?: Lane;
  /** The app's owner, when claimed: repeated convictions quarantine all of an account's apps. */
  ownerId?: string | null;
  /** Wall-clock deadline of the call (30 s for op calls). */
  deadlineMs?: number;
  /** The request that asked for the call (X-Request-Id): named in the pool's fault events. */
  requestId?: string;
  /** The op's declared access: a read caught in another app's fault is run once more (pool.ts). */
  access?: "read" | "write";
  /** Bytes of KV writes the op may make without waiting (its invocation's lease); Executor sets it. */
  allowance?: number;
  /** Only build the isolate (its module's top level runs), no op: Executor.warm sets it. */
  warm?: boolean;
  /**
   * A warm-up of code not yet published (Executor.stage): the isolate goes under this key, built
   * from this code, instead of the revision's. `seq` orders an app's staged builds.
   */
  staged?: { key: string; code: CodeBundle; seq: number };
  /** A warm-up that may take over the isolate staged under this key (see Executor.stage). */
  adopt?: string;
  /** The pool's own warm-up of a revision that has just proven itself: built on its lane's process. */
  graduating?: boolean;
}

export type ExecutorOutcome = (
  | { kind: "response"; status: number; contentType: string; body: string }
  | { kind: "threw"; message: string; stack: string }
) & {
  /** The console lines the app's isolate kept for the call, as it sent them: CallLog checks them. */
  logs?: unknown;
};

export type FaultReason = "quarantined" | "crashed" | "hung" | "cpu" | "memory" | "deadline" | "unavailable" | "shutting_down";

/**
 * Which processes run an app: claimed apps and free (unclaimed, anonymous) apps never share one,
 * so churn of throwaway apps cannot reach an app someone owns.
 */
export type Lane = "claimed" | "free";

/** The executor could not run the call to completion (503 `executor_error`). */
export class ExecutorFault extends Error {
  constructor(
    readonly reason: FaultReason,
    readonly execution: "not_started" | "may_have_run",
    message: string,
    /** For a process fault: the apps charged with it (blame.ts); the others were caught in it. */
    readonly charged?: ReadonlySet<string>,
  ) {
    super(message);
    this.name = "ExecutorFault";
  }
}

/** What the pool tells its owner: the log and the metrics read these. */
export type PoolEvent =
  | {
      type: "fault";
      slot: string;
      reason: FaultReason;
      suspects: string[];
      culprit: string | null;
      sole: boolean;
      quarantined: string | null;
      failedCalls: number;
      /** The requests of the calls in flight when it went down (X-Request-Id), to find their lines. */
      requests: string[];
    }
  | { type: "graduated"; appId: string; revision: number }
  | { type: "acquitted"; slot: string; apps: string[] }
  | { type: "recycle"; slot: string; rssBytes: number }
  | { type: "channel_rotated"; slot: string }
  | { type: "evicted"; slot: string; key: string }
  | { type: "start_failed"; slot: string; error: unknown };
