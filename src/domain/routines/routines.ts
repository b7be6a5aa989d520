import { randomUUID } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, type Plan } from "../../errors/index.ts";
import type { Database, Dialect } from "../../store/index.ts";
import type { RoutinesTable } from "../../store/schema/routines.ts";
import { requireAppWrite } from "../apps/app-write.ts";
import type { Apps } from "../apps/apps.ts";
import { writableBy } from "../apps/queries.ts";
import type { AppRunner } from "../operations/as-app.ts";
import { RouteSchemas } from "../../runtime/index.ts";
import { checkValue } from "../../schemas/index.ts";
import { insertWithinCaps } from "../capped-insert.ts";
import { PLAN_LIMITS, planRefusal } from "../../config/plans.ts";
import { INTERVAL_MS, nextSlot, parseInterval, type Interval } from "./intervals.ts";
import { failureOf, recordRun, type RunEnvelope } from "./runs.ts";
import { routineView, type RoutineView } from "./views.ts";
import { refuseSuspended } from "../apps/suspended.ts";
import { addCount } from "../../lib/counts.ts";

export interface RoutineLimits {
  plan: Plan;
  routines_per_app: number;
  routines_per_owner: number;
  /** Routines on the caller's own apps, counted against `routines_per_owner`. */
  used: number;
}

const ROUTINE_ID = /^routine_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Routines run one op each and may wait on app code for up to 30 s; a few at once on an instance
// keeps the executor pool for op calls, and one owner's share of those few leaves room for others.
const TICK_CONCURRENCY = 4;
const PER_OWNER_AT_ONCE = 2;
const TICK_BATCH = 200;

type DueRow = RoutinesTable & { owner: string | null; app_suspended_at: number | null; owner_suspended_at: number | null };

/**
 * Routines (spec: Routine; DECISIONS §8): CRUD under `app:write`, plan caps, run-now, and the
 * scheduler's tick, which claims each due routine with a conditional UPDATE so instances sharing
 * a database run each slot once.
 */
export class Routines {
  private readonly schemas = new RouteSchemas(1000);

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly apps: Apps,
    private readonly runner: AppRunner,
    private readonly config: { readonly baseUrl: string },
  ) {}

  /** Routine runs under way on this instance, in all and by owner (an unclaimed app is its own owner). */
  private running = 0;
  private readonly ownersRunning = new Map<string, number>();
  private readonly pending = new Set<Promise<void>>();

  async create(userId: string, appId: string, input: { op: string; interval: string }): Promise<RoutineView> {
    const interval = parseInterval(input.interval);
    const app = await this.apps.find(appId);
    await requireAppWrite(this.apps, userId, app);
    const route = Object.hasOwn(app.manifest.routes, input.op) ? app.manifest.routes[input.op] : undefined;
    if (route === undefined) throw apiError("unknown_operation", `this app declares no operation "${input.op}"`);
    // A routine sends `{}`: an op whose input schema refuses `{}` could never succeed.
    const validate = await this.schemas.get(`${app.id}:${app.revision}:${input.op}`, route.input);
    if (validate !== null && !checkValue(validate, {}).ok) {
      throw apiError("op_requires_input", `"${input.op}" requires input, but a routine calls it with {}; pick an op whose input fields are optional`);
    }
    // Caps and plan are the app owner's (spec: "from the app owner's plan"), whoever asks.
    const ownerId = app.ownerUserId ?? userId;
    const plan = await this.runner.planOf(ownerId);
    const now = this.clock.now();
    const row: RoutinesTable = {
      id: `routine_${randomUUID()}`,
      app_id: app.id,
      op: input.op,
      interval,
      enabled: 1,
      disabled_reason: null,
      next_run_at: now + INTERVAL_MS[interval],
      last_run_at: null,
      last_outcome: null,
      last_error: null,
      consecutive_failures: 0,
      missed_runs: 0,
      created_at: now,
      updated_at: now,
    };
    const limits = PLAN_LIMITS[plan];
    await insertWithinCaps(this.db, {
      table: "routines",
      dialect: this.dialect,
      appId: app.id,
      op: input.op,
      ownerId,
      duplicate: (existingId) => duplicate(input.op, existingId),
      perApp: { max: limits.routines_per_app, refusal: () => this.limitError(plan, "routines_per_app", limits.routines_per_app, app.ownerHandle) },
      perOwner: { max: limits.routines_per_owner, refusal: () => this.limitError(plan, "routines_per_owner", limits.routines_per_owner, app.ownerHandle) },
      insert: async (trx) => void (await trx.insertInto("routines").values(row).execute()),
    });
    return routineView(row);
  }

  /** GET /api/v1/routines: routines on every app where the caller has app:write, and their plan. */
  async listForUser(userId: string): Promise<{ routines: RoutineView[]; limits: RoutineLimits }> {
    const rows = await this.db
      .selectFrom("routines")
      .innerJoin("apps", "apps.id", "routines.app_id")
      .selectAll("routines")
      .select("apps.owner_user_id as app_owner")
      .where((eb) => writableBy(eb, userId))
      .orderBy("routines.created_at")
      .orderBy("routines.id")
      .execute();
    const plan = await this.runner.planOf(userId);
    const limits = PLAN_LIMITS[plan];
    return {
      routines: rows.map(({ app_owner: _owner, ...row }) => routineView(row)),
      limits: { plan, routines_per_app: limits.routines_per_app, routines_per_owner: limits.routines_per_owner, used: rows.filter((row) => row.app_owner === userId).length },
    };
  }

  async listForApp(userId: string, appId: string): Promise<RoutineView[]> {
    const app = await this.apps.find(appId);
    await requireAppWrite(this.apps, userId, app);
    const rows = await this.db.selectFrom("routines").selectAll().where("app_id", "=", app.id).orderBy("created_at").orderBy("id").execute();
    return rows.map(routineView);
  }

  async get(userId: string, id: string): Promise<RoutineView> {
    return routineView(await this.load(userId, id));
  }

  /** PATCH: the spec's state table. Disabling keeps the schedule; enabling restores it untouched. */
  async update(userId: string, id: string, patch: { interval?: string; enabled?: boolean }): Promise<RoutineView> {
    const interval: Interval | undefined = patch.interval === undefined ? undefined : parseInterval(patch.interval);
    const row = await this.load(userId, id);
    const now = this.clock.now();
    const changes: Partial<RoutinesTable> = { updated_at: now };
    const enabled = Number(row.enabled) === 1;
    if (patch.enabled === false && enabled) Object.assign(changes, { enabled: 0, disabled_reason: "owner" });
    if (patch.enabled === true && !enabled) Object.assign(changes, { enabled: 1, disabled_reason: null, consecutive_failures: 0 });
    // A new interval starts a fresh schedule from now; only re-enabling promises no recomputation.
    if (interval !== undefined && interval !== row.interval) Object.assign(changes, { interval, next_run_at: now + INTERVAL_MS[interval] });
    await this.db.updateTable("routines").set(changes).where("id", "=", id).execute();
    return this.get(userId, id);
  }

  async delete(userId: string, id: string): Promise<void> {
    await this.load(userId, id);
    await this.db.deleteFrom("routines").where("id", "=", id).execute();
  }

  /** POST /run: a tick on demand; it counts for the outcome and the failure counter, not the schedule. */
  async runNow(userId: string, id: string): Promise<{ routine: RoutineView; result: RunEnvelope }> {
    const row = await this.load(userId, id);
    // Refused before it runs, so it counts as no failure (five would switch the routine off).
    const app = await this.apps.get(row.app_id);
    if (app !== null) refuseSuspended(app);
    const result = await this.execute(row);
    return { routine: await this.get(userId, id), result };
  }

  /**
   * The scheduler job: starts the due routines' runs and returns, so a tick that meets slow
   * routines holds up neither the scheduler's other jobs nor the next tick (a tick had waited for
   * every run it started: 200 slow routines stalled the scheduler for 25 minutes an hour).
   */
  startDue(now: number, onError: (error: unknown) => void): void {
    const run = this.runDue(now).then(() => undefined, onError);
    this.pending.add(run);
    void run.finally(() => this.pending.delete(run));
  }

  /** Resolves once every run started so far has finished and been recorded (the store may close after). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }

  /**
   * Claims and runs the routines due at `now`; resolves with how many ran here. At most
   * TICK_CONCURRENCY run at once on this instance, whichever calls started them, and at most
   * PER_OWNER_AT_ONCE of one owner's, taken in turn by owner: one owner's slow routines wait for
   * their own, and another's due routine starts beside them. What is left waits for the next tick.
   */
  async runDue(now: number): Promise<number> {
    const due = await this.db
      .selectFrom("routines")
      .innerJoin("apps", "apps.id", "routines.app_id")
      .leftJoin("users", "users.id", "apps.owner_user_id")
      .selectAll("routines")
      .select(["apps.owner_user_id as owner", "apps.suspended_at as app_suspended_at", "users.suspended_at as owner_suspended_at"])
      .where("routines.enabled", "=", 1)
      .where("routines.next_run_at", "<=", now)
      .orderBy("routines.next_run_at")
      .limit(TICK_BATCH)
      .execute();
    let ran = 0;
    const queue = byOwnerInTurn(due);
    const worker = async () => {
      for (let row = this.nextRunnable(queue); row !== undefined; row = this.nextRunnable(queue)) {
        const owner = row.owner ?? row.app_id;
        this.running += 1;
        addCount(this.ownersRunning, owner, 1);
        try {
          if (!(await this.claim(row, now))) continue;
          // A suspended app's routines skip their slots (DECISIONS §15): no run, and no failure
          // counted towards switching them off, so they tick again once the suspension is lifted.
          if (row.app_suspended_at !== null || row.owner_suspended_at !== null) continue;
          ran++;
          await this.execute(row);
        } finally {
          this.running -= 1;
          addCount(this.ownersRunning, owner, -1);
        }
      }
    };
    await Promise.all(Array.from({ length: TICK_CONCURRENCY }, worker));
    return ran;
  }

  /** Takes the first queued routine whose owner has room, while this instance has room at all. */
  private nextRunnable(queue: DueRow[]): DueRow | undefined {
    if (this.running >= TICK_CONCURRENCY) return undefined;
    const at = queue.findIndex((row) => (this.ownersRunning.get(row.owner ?? row.app_id) ?? 0) < PER_OWNER_AT_ONCE);
    return at < 0 ? undefined : queue.splice(at, 1)[0];
  }

  /**
   * Moves the routine to its next slot only if no one else has: the WHERE on the slot we read
   * makes the UPDATE a compare-and-set, so of several instances exactly one runs the slot.
   */
  private async claim(row: RoutinesTable, now: number): Promise<boolean> {
    const slot = Number(row.next_run_at);
    const { next, missed } = nextSlot(slot, INTERVAL_MS[row.interval], now);
    const result = await this.db
      .updateTable("routines")
      .set({ next_run_at: next, missed_runs: sql<number>`missed_runs + ${missed}`, updated_at: now })
      .where("id", "=", row.id)
      .where("enabled", "=", 1)
      .where("next_run_at", "=", slot)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  private async execute(row: RoutinesTable): Promise<RunEnvelope> {
    let result: RunEnvelope;
    try {
      result = { ok: true, value: await this.runner.run(row.app_id, row.op, {}, "routine") };
    } catch (error) {
      result = { ok: false, error: failureOf(error) };
    }
    await recordRun(this.db, row.id, this.clock.now(), result.ok ? null : result.error);
    return result;
  }

  /** The routine, or 404 when it is missing or the caller lacks app:write on its app. */
  private async load(userId: string, id: string): Promise<RoutinesTable> {
    const missing = () => apiError("not_found", `no routine ${id}`);
    if (!ROUTINE_ID.test(id)) throw missing();
    const row = await this.db.selectFrom("routines").selectAll().where("id", "=", id).executeTakeFirst();
    if (row === undefined) throw missing();
    const app = await this.apps.get(row.app_id);
    if (app === null) throw missing();
    try {
      await requireAppWrite(this.apps, userId, app);
    } catch {
      throw missing();
    }
    return row;
  }

  private limitError(plan: Plan, limit: "routines_per_app" | "routines_per_owner", max: number, handle: string | null) {
    const scope = limit === "routines_per_app" ? "this app" : "your apps";
    const verb = limit === "routines_per_app" ? "has" : "have";
    return planRefusal("routine_limit_exceeded", `${scope} already ${verb} the ${max} routines the ${plan} plan allows`, {
      plan,
      limit,
      max,
      baseUrl: this.config.baseUrl,
      handle,
    });
  }
}

function duplicate(op: string, existingId: string | null) {
  return apiError("duplicate_routine", `this app already has a routine for "${op}"${existingId === null ? "" : ` (${existingId})`}; PATCH it instead`);
}

/** Due routines taken in turn by owner (each owner's in the order they fell due), the first-due owner first. */
function byOwnerInTurn(rows: DueRow[]): DueRow[] {
  const owners = new Map<string, DueRow[]>();
  for (const row of rows) {
    const key = row.owner ?? row.app_id;
    const list = owners.get(key);
    if (list === undefined) owners.set(key, [row]);
    else list.push(row);
  }
  const out: DueRow[] = [];
  for (let round = 0; out.length < rows.length; round++) for (const list of owners.values()) if (round < list.length) out.push(list[round] as DueRow);
  return out;
}
