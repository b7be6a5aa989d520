import { sql, type Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, type ApiError } from "../../errors/index.ts";
import { PreparedQuery, type Database, type StampedCache } from "../../store/index.ts";
import type { WebhooksTable } from "../../store/schema/webhooks.ts";
import { recordBytes, selectApps, toRecord, type AppRecord } from "../apps/queries.ts";
import type { AppRunner } from "../operations/as-app.ts";
import { nestingError } from "../../lib/json-depth.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { insertDelivery, sweepDeliveries } from "./deliveries.ts";
import type { DeliveryLog } from "./delivery-log.ts";
import { secretMatches } from "./secret.ts";
import { WEBHOOK_ID } from "./webhooks.ts";

/** A webhook being delivered to, with its app (read as an op call reads it, owner's plan included). */
export interface DeliveryTarget {
  row: Pick<WebhooksTable, "id" | "app_id" | "op" | "secret_hash" | "enabled">;
  app: AppRecord;
}

// A delivery's one read: what it needs of the webhook, joined to its app (on SQLite, once per stamp).
const webhookWithApp = new PreparedQuery(1, (db, id: string) =>
  selectApps(db)
    .innerJoin("webhooks", "webhooks.app_id", "apps.id")
    .select(["webhooks.id as webhook_id", "webhooks.op as webhook_op", "webhooks.secret_hash as webhook_secret_hash", "webhooks.enabled as webhook_enabled"])
    .where("webhooks.id", "=", id),
);
// The webhook's last outcome, written with each attempted delivery's record.
const succeeded = new PreparedQuery(3, (db, ts: number, outcome: Outcome, id: string) =>
  db.updateTable("webhooks").set({ last_run_at: ts, last_outcome: outcome, last_error: null, consecutive_failures: 0 }).where("id", "=", id),
);
const failed = new PreparedQuery(4, (db, ts: number, outcome: Outcome, error: string, id: string) =>
  db
    .updateTable("webhooks")
    .set({ last_run_at: ts, last_outcome: outcome, last_error: error, consecutive_failures: sql<number>`consecutive_failures + 1` })
    .where("id", "=", id),
);
type Outcome = WebhooksTable["last_outcome"];
/** Bytes of each body kept for a request that did not carry the webhook's secret (the plan's cap for one that did). */
const UNAUTHENTICATED_BODY_BYTES = 512;

export interface DeliveryResult {
  ts: number;
  status: number;
  /** The exact JSON the sender receives. */
  response: string;
  /** The refusal or failure, or null when the op answered `ok: true`. */
  error: ApiError | null;
  /** True once the request carried the webhook's secret. */
  authenticated: boolean;
  /** True once the request passed its secret, rate and enabled checks and the body was looked at. */
  attempted: boolean;
  /** The op ran only after waiting for the app's concurrent-run ceiling to clear. */
  deferred: boolean;
  durationMs: number;
}

/**
 * The steps of `POST /api/v1/hooks/{id}` (spec: Webhooks → Delivery rules), called in order by
 * the route, which owns the HTTP parts (rate-limit buckets and headers).
 */
export class WebhookDelivery {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly runner: AppRunner,
    private readonly log: DeliveryLog,
    /** Targets kept while nothing they join changed (null for none). */
    private readonly targets: StampedCache<DeliveryTarget | null> | null = null,
  ) {}

  /** The webhook named by a delivery URL; 404 `not_found` when there is none (nothing to record under). */
  async target(id: string): Promise<DeliveryTarget> {
    const missing = () => apiError("not_found", `no webhook ${id}`);
    if (!WEBHOOK_ID.test(id)) throw missing();
    const load = () => this.load(id);
    const target = await (this.targets === null ? load() : this.targets.read(id, load, (found) => (found === null ? null : recordBytes(found.app) + 512)));
    if (target === null) throw missing();
    return target;
  }

  private async load(id: string): Promise<DeliveryTarget | null> {
    const found = await webhookWithApp.takeFirst(this.db, id);
    if (found === undefined) return null;
    // The delivery runs with this record, and its owner's plan caps the stored bodies.
    const app = toRecord(found);
    return { row: { id: found.webhook_id, app_id: app.id, op: found.webhook_op, secret_hash: found.webhook_secret_hash, enabled: found.webhook_enabled }, app };
  }

  /** 401 `unauthorized` unless `presented` is the webhook's current secret. */
  authenticate(target: DeliveryTarget, presented: string | null): void {
    if (secretMatches(presented, target.row.secret_hash)) return;
    throw apiError(
      "unauthorized",
      presented === null
        ? "send the webhook's secret as 'Authorization: Bearer svc_hook_…' or as ?key=svc_hook_…"
        : "the webhook secret is wrong (it may have been rotated)",
    );
  }

  assertEnabled(target: DeliveryTarget): void {
    if (Number(target.row.enabled) !== 1) throw apiError("webhook_disabled", "this webhook is disabled by its owner; deliveries are refused until it is enabled");
  }

  /**
   * Parses the body as a JSON object and runs the target op as the app. A delivery that meets the
   * app's concurrent-run ceiling waits for a slot (DECISIONS §8 `deferred`; `SLOT_WAIT_MS`) rather
   * than bouncing the sender; past that the 429 `app_busy` stands.
   */
  async run(target: DeliveryTarget, raw: Buffer): Promise<{ value: unknown; deferred: boolean }> {
    let input: unknown;
    const refused = nestingError(raw);
    if (refused !== null) throw refused;
    try {
      input = JSON.parse(raw.toString("utf8"));
    } catch {
      throw apiError("invalid_request", "the body is not valid JSON; send a JSON object");
    }
    if (typeof input !== "object" || input === null || Array.isArray(input)) throw apiError("invalid_request", "the body must be a JSON object");
    let deferred = false;
    const value = await this.runner.run(target.app, target.row.op, input, "webhook", { "x-svc-webhook": target.row.id }, () => (deferred = true));
    return { value, deferred };
  }

  /**
   * Records the request (every one that reaches here) and, for attempted deliveries, the
   * webhook's last outcome: queued on the delivery log, written within milliseconds in one
   * transaction with the records around it (see DeliveryLog). The sender waits on the promise
   * only while the log is far behind the store.
   */
  record(target: DeliveryTarget, request: Buffer, result: DeliveryResult): Promise<void> {
    const outcome = result.error !== null ? "failure" : result.deferred ? "deferred" : "success";
    // Anyone who knows the URL may post without the secret: what they sent is kept only as far as
    // a sender getting its setup wrong needs to see, not as 16 KiB of their text a request.
    const capBytes = result.authenticated ? PLAN_LIMITS[target.app.owner?.plan ?? "free"].delivery_body_bytes : UNAUTHENTICATED_BODY_BYTES;
    const id = target.row.id;
    return this.log.add(async (trx) => {
      await insertDelivery(trx, {
        webhookId: id,
        appId: target.row.app_id,
        ts: result.ts,
        status: result.status,
        outcome,
        refusal: result.error?.kind ?? null,
        request,
        response: result.response,
        durationMs: result.durationMs,
        capBytes,
      });
      if (!result.attempted) return;
      // Diagnostic only: webhooks never disable themselves (spec: Webhook states).
      if (result.error === null) await succeeded.execute(trx, result.ts, outcome, id);
      else await failed.execute(trx, result.ts, outcome, JSON.stringify({ kind: result.error.kind, message: result.error.message }), id);
    }, request.length + result.response.length);
  }

  /** Resolves once every delivery answered so far is recorded (tests that read the table). */
  settled(): Promise<void> {
    return this.log.settled();
  }

  /** Records and syncs every delivery answered so far; the store may close after. */
  close(): Promise<void> {
    return this.log.close();
  }

  /** The retention sweep job. */
  sweep(): Promise<{ bodies: number; records: number }> {
    return sweepDeliveries(this.db, this.clock.now());
  }
}
