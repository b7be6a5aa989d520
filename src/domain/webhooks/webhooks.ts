import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, type Plan } from "../../errors/index.ts";
import type { Database, Dialect } from "../../store/index.ts";
import type { WebhooksTable } from "../../store/schema/webhooks.ts";
import { requireAppWrite } from "../apps/app-write.ts";
import { writableBy, type AppRecord } from "../apps/queries.ts";
import type { Apps } from "../apps/apps.ts";
import type { AppRunner } from "../operations/as-app.ts";
import { insertWithinCaps } from "../capped-insert.ts";
import { PLAN_LIMITS, planRefusal } from "../../config/plans.ts";
import { DELIVERIES_PAGE_DEFAULT, listDeliveries, type DeliveryView } from "./deliveries.ts";
import type { DeliveryLog } from "./delivery-log.ts";
import { mintHookSecret } from "./secret.ts";
import { webhookView, type WebhookView } from "./views.ts";

export const WEBHOOK_NAME_MAX = 80;
export const WEBHOOK_ID = /^webhook_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface WebhookLimits {
  plan: Plan;
  webhooks_per_app: number;
  webhooks_per_owner: number;
  /** Webhooks on the caller's own apps, counted against `webhooks_per_owner`. */
  used: number;
}

export interface WebhookPatch {
  rename?: string;
  enabled?: boolean;
  rotate_secret?: boolean;
}

/**
 * Webhooks (spec: Webhook; DECISIONS §8): CRUD under `app:write`, plan caps, secret rotation,
 * and the delivery log. Deliveries themselves are in delivery.ts. Every read of a webhook first
 * waits for the records of deliveries already answered here (`DeliveryLog.settled`), so its
 * log and last outcome include them, and an update cannot be overtaken by an older outcome.
 */
export class Webhooks {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly runner: AppRunner,
    private readonly config: { readonly baseUrl: string },
    private readonly log: DeliveryLog,
  ) {}

  async create(userId: string, appId: string, input: { op: string; name?: string }): Promise<WebhookView> {
    const app = await this.apps.find(appId);
    await requireAppWrite(this.apps, userId, app);
    const route = Object.hasOwn(app.manifest.routes, input.op) ? app.manifest.routes[input.op] : undefined;
    if (route === undefined) throw apiError("unknown_operation", `this app declares no operation "${input.op}"`);
    const ownerId = app.ownerUserId ?? userId;
    const plan = await this.runner.planOf(ownerId);
    const secret = mintHookSecret();
    const now = this.clock.now();
    const row: WebhooksTable = {
      id: `webhook_${randomUUID()}`,
      app_id: app.id,
      op: input.op,
      // Spec: defaults to the op's title, description or identifier.
      name: (input.name ?? route.title ?? route.description ?? input.op).slice(0, WEBHOOK_NAME_MAX),
      secret_hash: secret.hash,
      secret_prefix: secret.prefix,
      enabled: 1,
      disabled_reason: null,
      last_run_at: null,
      last_outcome: null,
      last_error: null,
      consecutive_failures: 0,
      created_at: now,
      updated_at: now,
    };
    const limits = PLAN_LIMITS[plan];
    await insertWithinCaps(this.db, {
      table: "webhooks",
      dialect: this.dialect,
      appId: app.id,
      op: input.op,
      ownerId,
      duplicate: (existingId) => duplicate(input.op, existingId),
      perApp: { max: limits.webhooks_per_app, refusal: () => this.limitError(plan, "webhooks_per_app", limits.webhooks_per_app, app) },
      perOwner: { max: limits.webhooks_per_owner, refusal: () => this.limitError(plan, "webhooks_per_owner", limits.webhooks_per_owner, app) },
      insert: async (trx) => void (await trx.insertInto("webhooks").values(row).execute()),
    });
    return webhookView(row, app.manifest, this.config.baseUrl, secret.plaintext);
  }

  /** GET /api/v1/webhooks: webhooks on every app where the caller has app:write, and their plan. */
  async listForUser(userId: string): Promise<{ webhooks: WebhookView[]; limits: WebhookLimits }> {
    await this.log.settled();
    const rows = await this.db
      .selectFrom("webhooks")
      .innerJoin("apps", "apps.id", "webhooks.app_id")
      .selectAll("webhooks")
      .select(["apps.manifest as app_manifest", "apps.owner_user_id as app_owner"])
      .where((eb) => writableBy(eb, userId))
      .orderBy("webhooks.created_at")
      .orderBy("webhooks.id")
      .execute();
    const plan = await this.runner.planOf(userId);
    const limits = PLAN_LIMITS[plan];
    return {
      webhooks: rows.map(({ app_manifest, app_owner: _owner, ...row }) => webhookView(row, JSON.parse(app_manifest) as AppRecord["manifest"], this.config.baseUrl)),
      limits: { plan, webhooks_per_app: limits.webhooks_per_app, webhooks_per_owner: limits.webhooks_per_owner, used: rows.filter((row) => row.app_owner === userId).length },
    };
  }

  async listForApp(userId: string, appId: string): Promise<WebhookView[]> {
    const app = await this.apps.find(appId);
    await requireAppWrite(this.apps, userId, app);
    await this.log.settled();
    const rows = await this.db.selectFrom("webhooks").selectAll().where("app_id", "=", app.id).orderBy("created_at").orderBy("id").execute();
    return rows.map((row) => webhookView(row, app.manifest, this.config.baseUrl));
  }

  async get(userId: string, id: string): Promise<WebhookView> {
    const { row, app } = await this.load(userId, id);
    return webhookView(row, app.manifest, this.config.baseUrl);
  }

  /** PATCH: a rotation replaces the stored hash, so the old secret fails from this request on. */
  async update(userId: string, id: string, patch: WebhookPatch): Promise<WebhookView> {
    const { row, app } = await this.load(userId, id);
    const now = this.clock.now();
    const changes: Partial<WebhooksTable> = { updated_at: now };
    if (patch.rename !== undefined) changes.name = patch.rename;
    const enabled = Number(row.enabled) === 1;
    if (patch.enabled === false && enabled) Object.assign(changes, { enabled: 0, disabled_reason: "owner" });
    if (patch.enabled === true && !enabled) Object.assign(changes, { enabled: 1, disabled_reason: null, consecutive_failures: 0 });
    const secret = patch.rotate_secret === true ? mintHookSecret() : null;
    if (secret !== null) Object.assign(changes, { secret_hash: secret.hash, secret_prefix: secret.prefix });
    await this.db.updateTable("webhooks").set(changes).where("id", "=", id).execute();
    return webhookView({ ...row, ...changes }, app.manifest, this.config.baseUrl, secret?.plaintext);
  }

  async delete(userId: string, id: string): Promise<void> {
    await this.load(userId, id);
    // Its delivery records stay and age out (spec Limits).
    await this.db.deleteFrom("webhooks").where("id", "=", id).execute();
  }

  async deliveries(userId: string, id: string, page: { limit?: number; before?: number }): Promise<DeliveryView[]> {
    await this.load(userId, id);
    return listDeliveries(this.db, id, page.limit ?? DELIVERIES_PAGE_DEFAULT, page.before ?? null);
  }

  /** The webhook and its app, or 404 when it is missing or the caller lacks app:write. */
  private async load(userId: string, id: string): Promise<{ row: WebhooksTable; app: AppRecord }> {
    const missing = () => apiError("not_found", `no webhook ${id}`);
    if (!WEBHOOK_ID.test(id)) throw missing();
    await this.log.settled();
    const row = await this.db.selectFrom("webhooks").selectAll().where("id", "=", id).executeTakeFirst();
    if (row === undefined) throw missing();
    const app = await this.apps.get(row.app_id);
    if (app === null) throw missing();
    try {
      await requireAppWrite(this.apps, userId, app);
    } catch {
      throw missing();
    }
    return { row, app };
  }

  private limitError(plan: Plan, limit: "webhooks_per_app" | "webhooks_per_owner", max: number, app: AppRecord) {
    const scope = limit === "webhooks_per_app" ? "this app already has" : "your apps already have";
    return planRefusal("webhook_limit_exceeded", `${scope} the ${max} webhooks the ${plan} plan allows`, {
      plan,
      limit,
      max,
      baseUrl: this.config.baseUrl,
      handle: app.ownerHandle,
    });
  }
}

function duplicate(op: string, existingId: string | null) {
  return apiError("duplicate_webhook", `this app already has a webhook for "${op}"${existingId === null ? "" : ` (${existingId})`}; rotate or rename it instead`);
}

