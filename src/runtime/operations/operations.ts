import { SECOND, type Clock } from "../../config/clock.ts";
import { ApiError, apiError, type Plan } from "../../errors/index.ts";
import type { Executor } from "../executor/executor.ts";
import { capabilitiesOf, ExecutorFault, type AppCode, type ExecutorCall, type ExecutorOutcome, type Lane, type RouteSpec } from "../executor/types.ts";
import type { ActivitySink, CallCountSink, DiagSink, LogLineSink, OpCallSink } from "../ports.ts";
import { CallLog } from "../logs/call-log.ts";
import type { LineRedactors } from "../logs/redactors.ts";
import type { RedactorSource } from "../../lib/redact.ts";
import { RunCeilings } from "./ceilings.ts";
import { checkValue } from "../../schemas/index.ts";
import { inputError, RouteSchemas, TOO_COSTLY } from "./schemas.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../lib/json-depth.ts";

export type Role = "owner" | "collaborator" | "end-user" | "viewer" | "team-admin" | "team-member" | "app" | "visitor";
export type Trigger = "http" | "routine" | "webhook" | "agent";

/** The parts of an app's active revision an op call needs; the apps service supplies them. */
export interface AppRecord {
  id: string;
  revision: number;
  manifest: { routes?: Record<string, RouteSpec>; capabilities?: { imports?: string[]; origins?: string[] } };
  /** The owner's plan (a team's for team apps); sets the run ceilings. Default free. */
  plan?: Plan;
  /** Changes when the app's secrets change (issue 5); part of the isolate's identity. */
  secretsVersion?: number;
  /** Free (unclaimed) apps run apart from claimed ones; claimed when omitted. */
  lane?: Lane;
  /** The owning account, for the executor's per-account quarantine; null while unclaimed. */
  ownerId?: string | null;
}

export interface OperationCall {
  app: AppRecord;
  role: Role;
  op: string;
  /** The parsed JSON body; undefined for an empty body. */
  input: unknown;
  trigger: Trigger;
  userId: string | null;
  /** Extra `x-svc-*` headers for the app (`x-svc-webhook` on deliveries). */
  headers?: Record<string, string>;
  /** The request that asked for the call (X-Request-Id): on the app's request, its events and the executor's lines. */
  requestId?: string;
  /** Called when the run had to wait for a concurrent-run slot (see SLOT_WAIT_MS). */
  onWaited?: () => void;
  /** An anonymous visitor of the app's custom domain: the call reads and writes their own store (DECISIONS §12). */
  visitor?: string;
}

export const OPERATION_DEADLINE_MS = 30 * SECOND;

/** Which isolate runs the app's active revision, and on which processes: the same for a call and a warm-up. */
function isolateOf(app: AppRecord): Pick<ExecutorCall, "appId" | "revision" | "secretsVersion" | "lane" | "ownerId"> {
  return { appId: app.id, revision: app.revision, secretsVersion: app.secretsVersion ?? 0, lane: app.lane ?? "claimed", ownerId: app.ownerId ?? null };
}

/**
 * How long a call may wait for a concurrent-run slot, by trigger; the rest are refused at once
 * (429 `app_busy`). A webhook sender gets an answer it can act on before it times out (senders
 * give up after 10 s to 30 s; DECISIONS §8 `deferred`); an agent's tool call is not metered (spec,
 * Rate limits), so an agent fanning out calls to one app waits as long as an op may run.
 */
export const SLOT_WAIT_MS: Readonly<Partial<Record<Trigger, number>>> = { webhook: 10 * SECOND, agent: OPERATION_DEADLINE_MS };

/** Where an op call's failures, counts and lines go, and the call's bounds. */
export interface OperationsDeps {
  diag: DiagSink;
  activity: ActivitySink;
  clock: Clock;
  baseUrl: string;
  /** Wall-clock bound of one call; OPERATION_DEADLINE_MS when omitted. */
  deadlineMs?: number;
  /** Scrubs the app's secret values from failure text before it is returned or recorded. */
  redactorFor?: RedactorSource;
  /** Counts each call that ran, and whether it failed, for the console's chart. */
  counts?: CallCountSink;
  /** Each call's outcome, for the metrics. */
  metrics?: OpCallSink;
  /** What the app's code printed (DECISIONS §18); nothing is kept when omitted. */
  logs?: { sink: LogLineSink; redactors: LineRedactors };
}

/**
 * Runs one declared operation of an app (DECISIONS §4): route lookup, role check, input
 * validation, run ceilings, the executor call under a deadline, and the mapping of what the
 * app answered onto the spec's envelope, with diag and activity records on failure.
 */
export class Operations {
  private readonly schemas = new RouteSchemas();
  private readonly ceilings: RunCeilings;
  private readonly diag: DiagSink;
  private readonly activity: ActivitySink;
  private readonly baseUrl: string;
  private readonly deadlineMs: number;
  private readonly redactorFor: RedactorSource;
  private readonly counts: CallCountSink | null;
  private readonly metrics: OpCallSink | null;
  private readonly logs: NonNullable<OperationsDeps["logs"]> | null;

  constructor(
    private readonly executor: Executor,
    deps: OperationsDeps,
  ) {
    this.ceilings = new RunCeilings(deps.clock);
    this.diag = deps.diag;
    this.activity = deps.activity;
    this.baseUrl = deps.baseUrl;
    this.deadlineMs = deps.deadlineMs ?? OPERATION_DEADLINE_MS;
    this.redactorFor = deps.redactorFor ?? (() => Promise.resolve((text) => text));
    this.counts = deps.counts ?? null;
    this.metrics = deps.metrics ?? null;
    this.logs = deps.logs ?? null;
  }

  /** Forgets every app's runs per minute so far (RunCeilings.resetWindows); running calls keep their slots. */
  resetRunWindows(): void {
    this.ceilings.resetWindows();
  }

  /** Whether the app ran on an executor process lately (its next revision is worth warming). */
  ranLately(appId: string): boolean {
    return this.executor.pool.ranLately(appId);
  }

  /**
   * Builds the app's active revision's isolate ahead of its first call (Executor.warm), or takes
   * over the one staged under `adopt` for exactly this code.
   */
  async warm(app: AppRecord, adopt: string | null = null): Promise<void> {
    await this.executor.warm({ ...isolateOf(app), caps: capabilitiesOf(app.manifest.capabilities?.imports), deadlineMs: this.deadlineMs, ...(adopt === null ? {} : { adopt }) });
  }

  /**
   * Starts building the isolate of `code`, which `app` (its manifest already `code`'s) is about
   * to publish (Executor.stage).
   */
  stage(app: AppRecord, code: AppCode): Promise<{ key: string; built: Promise<unknown> }> {
    const { revision: _, ...isolate } = isolateOf(app);
    return this.executor.stage({ ...isolate, caps: capabilitiesOf(app.manifest.capabilities?.imports), deadlineMs: this.deadlineMs }, code);
  }

  /** Returns the op's `value`; every refusal or failure is a thrown ApiError. */
  async call(c: OperationCall): Promise<unknown> {
    if (this.metrics === null) return this.run(c);
    try {
      const value = await this.run(c);
      this.metrics.opCall("ok");
      return value;
    } catch (error) {
      this.metrics.opCall(error instanceof ApiError ? error.kind : "internal_error");
      throw error;
    }
  }

  private async run(c: OperationCall): Promise<unknown> {
    const { app, op } = c;
    const routes = app.manifest.routes ?? {};
    const route = Object.hasOwn(routes, op) ? routes[op] : undefined;
    if (route === undefined) throw apiError("unknown_operation", `this app declares no operation "${op}"`);
    const access = route.access === "read" ? "read" : "write";
    if (c.role === "viewer" && access !== "read") throw apiError("forbidden", `viewers may call only read operations; "${op}" is a write operation`);

    // Only an empty body is {} (DECISIONS §4); JSON `null` is a value, and not an object.
    const input = c.input === undefined ? {} : c.input;
    if (typeof input !== "object" || input === null || Array.isArray(input)) throw apiError("invalid_input", "the input must be a JSON object");
    const schema = await this.schemas.get(`${app.id}:${app.revision}:${op}:in`, route.input);
    const checked = schema === null ? null : checkValue(schema, input);
    if (checked !== null && !checked.ok) {
      if ("tooCostly" in checked) throw apiError("invalid_input", `the input is too large for this operation: ${TOO_COSTLY}`, { details: { reason: "validation_budget" } });
      inputError(checked.errors);
    }

    const { release, waited } = await this.ceilings.acquire(app.id, app.plan ?? "free", `${this.baseUrl}/app/${app.id}/api/${encodeURIComponent(op)}`, SLOT_WAIT_MS[c.trigger]);
    if (waited) c.onWaited?.();
    const caps = capabilitiesOf(app.manifest.capabilities?.imports);
    const log = this.callLog(c);
    const invocation = this.executor.invocations.mint({ appId: app.id, revision: app.revision, secretsVersion: app.secretsVersion ?? 0, op, access, caps: new Set(caps), ...(log === null ? {} : { log }), ...(c.visitor === undefined ? {} : { visitor: c.visitor }) });
    // Settled once its outcome is recorded: a deletion waiting on its calls drops what they wrote.
    try {
      let outcome: ExecutorOutcome;
      try {
        outcome = await this.executor.invoke({
          ...isolateOf(app),
          caps,
          op,
          headers: {
            ...c.headers,
            "x-svc-op": op,
            "x-svc-trigger": c.trigger,
            "x-svc-role": c.role,
            ...(c.userId === null ? {} : { "x-svc-user": c.userId }),
            ...(c.requestId === undefined ? {} : { "x-svc-request": c.requestId }),
            "x-svc-invocation": invocation.id,
            // The isolate keeps no cached reads across a visitor's call: its cache holds the app's store.
            ...(c.visitor === undefined ? {} : { "x-svc-store": "visitor" }),
          },
          body: JSON.stringify(input),
          deadlineMs: this.deadlineMs,
          access,
          ...(c.requestId === undefined ? {} : { requestId: c.requestId }),
        });
      } catch (error) {
        this.counts?.count(app.id, true);
        await log?.finish();
        if (error instanceof ExecutorFault) throw executorError(error);
        throw error;
      } finally {
        this.executor.invocations.end(invocation.id);
        release();
      }
      // Kept before the caller has its answer: a read of the app's logs after it finds them.
      if (log !== null) {
        await log.captured(outcome.logs);
        await log.finish();
      }
      try {
        const value = await this.result(c, route, outcome, invocation.refusal);
        this.counts?.count(app.id, false);
        return value;
      } catch (error) {
        this.counts?.count(app.id, true);
        throw error;
      }
    } finally {
      this.executor.invocations.settle(invocation.id);
    }
  }

  /** The log of one call, when lines are kept. */
  private callLog(c: OperationCall): CallLog | null {
    const logs = this.logs;
    if (logs === null) return null;
    const { app } = c;
    return new CallLog(logs.sink, { appId: app.id, op: c.op, requestId: c.requestId ?? null, startedAt: Date.now() }, () => logs.redactors.for(app.id, app.secretsVersion ?? 0), Date.now);
  }

  private async result(c: OperationCall, route: RouteSpec, outcome: ExecutorOutcome, refusal: ApiError | null): Promise<unknown> {
    const { app, op } = c;
    // A write from a read op is a contract error of the route: it wins whatever the app did next.
    if (refusal?.kind === "forbidden_write") throw refusal;
    // An answer nested past the bound would overflow the stack of whatever serializes it next.
    if (outcome.kind === "response" && nestsDeeperThan(outcome.body)) {
      throw apiError("invalid_output", `the operation's result nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`, { details: { reason: "too_deep" } });
    }
    const envelope = outcome.kind === "response" ? parseEnvelope(outcome.body) : null;
    if (envelope === null) {
      // A binding refusal the app let escape: the caller sees the refusal, not a generic throw.
      if (refusal !== null && outcome.kind === "threw") throw refusal;
      const redact = await this.redactorFor(app.id);
      const message = redact(outcome.kind === "threw" ? outcome.message : `the operation answered ${outcome.status} without a result envelope`);
      this.diag.pushError(app.id, message, outcome.kind === "threw" ? redact(outcome.stack) : "");
      await this.record(app.id, "api_proxy_result", app.revision, `${op}: ${message}`, {
        op,
        trigger: c.trigger,
        outcome: outcome.kind === "threw" ? "threw" : "bad_envelope",
        message,
        ...(c.requestId === undefined ? {} : { requestId: c.requestId }),
      });
      throw apiError("operation_failed", message, {}, { status: 500 });
    }
    if (!envelope.ok) throw apiError("operation_failed", (await this.redactorFor(app.id))(envelope.message));
    const schema = await this.schemas.get(`${app.id}:${app.revision}:${op}:out`, route.output);
    const checked = schema === null ? null : checkValue(schema, envelope.value);
    if (checked !== null && !checked.ok) {
      const problems = "tooCostly" in checked ? [`/ ${TOO_COSTLY}`] : checked.errors.map((e) => `${e.instancePath || "/"} ${e.message ?? ""}`);
      await this.record(app.id, "contract_validation", app.revision, `${op}: output does not match its schema`, {
        op,
        direction: "output",
        problems: problems.join("; "),
        ...(c.requestId === undefined ? {} : { requestId: c.requestId }),
      });
      throw apiError("invalid_output", `the operation's result does not match its output schema: ${problems.join("; ")}`, { details: { errors: problems } });
    }
    return envelope.value;
  }

  private async record(...args: Parameters<ActivitySink["record"]>): Promise<void> {
    await this.activity.record(...args).then(() => undefined, swallow);
  }
}

/** Never lets a failing activity write replace the error the caller should see. */
function swallow(): void {
  // The store is down or the row was refused; the op's own error is what matters here.
}

function parseEnvelope(body: string): { ok: true; value: unknown } | { ok: false; message: string } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof parsed !== "object" || parsed === null) return null;
  const env = parsed as { ok?: unknown; value?: unknown; error?: { message?: unknown } };
  if (env.ok === true) return { ok: true, value: env.value ?? null };
  if (env.ok === false) {
    const message = typeof env.error?.message === "string" ? env.error.message : "the operation failed";
    return { ok: false, message };
  }
  return null;
}

function executorError(fault: ExecutorFault): ApiError {
  return apiError("executor_error", fault.message, { details: { execution: fault.execution, reason: fault.reason } });
}
