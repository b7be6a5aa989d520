import { sql, type Kysely, type RawBuilder, type SqlBool } from "kysely";
import { DAY, HOUR, type Clock } from "../../config/clock.ts";
import type { Database } from "../../store/index.ts";

export interface UserListing {
  id: string;
  handle: string;
  email: string;
  plan: string;
  role: string;
  kind: string;
  createdAt: number;
  apps: number;
  suspension: { at: number; reason: string } | null;
}

export interface AppListing {
  id: string;
  name: string;
  manifestId: string;
  ownerHandle: string | null;
  ownerId: string | null;
  claimedAt: number | null;
  createdAt: number;
  storedBytes: number;
  /** Op calls and failures in the last 24 hours, from every instance's counts. */
  lastDay: { calls: number; failures: number };
  /** The app's own suspension, or its owner's. */
  suspension: { of: "app" | "owner"; at: number; reason: string } | null;
}

export const LISTING_LIMIT = 50;

/**
 * `lower(column)` contains `q`, as a LIKE whose wildcards in `q` are escaped (an email with an
 * underscore is found); `escape '\'` reads the same on SQLite and PostgreSQL.
 */
function contains(column: string, q: string): RawBuilder<SqlBool> {
  const pattern = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
}

/**
 * What operators search (DECISIONS §15): accounts by handle or email, apps by id, name, owner
 * handle or `anonymous` (unclaimed). Newest first, at most LISTING_LIMIT.
 */
export class Directory {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async users(query: string): Promise<UserListing[]> {
    const q = query.trim();
    let select = this.db
      .selectFrom("users")
      .select((eb) => [
        "users.id",
        "users.handle",
        "users.email",
        "users.plan",
        "users.role",
        "users.kind",
        "users.created_at",
        "users.suspended_at",
        "users.suspended_reason",
        eb.selectFrom("apps").select(eb.fn.countAll<number>().as("n")).whereRef("apps.owner_user_id", "=", "users.id").as("apps"),
      ]);
    if (q !== "") select = select.where((eb) => eb.or([contains("users.handle", q), contains("users.email", q)]));
    const rows = await select.orderBy(exactFirst(sql.ref("users.handle"), q.replace(/^@/, "").toLowerCase())).orderBy("users.created_at", "desc").limit(LISTING_LIMIT).execute();
    return rows.map((row) => ({
      id: row.id,
      handle: row.handle,
      email: row.email,
      plan: row.plan,
      role: row.role,
      kind: row.kind,
      createdAt: Number(row.created_at),
      apps: Number(row.apps ?? 0),
      suspension: row.suspended_at === null ? null : { at: Number(row.suspended_at), reason: row.suspended_reason ?? "" },
    }));
  }

  async apps(query: string): Promise<AppListing[]> {
    const q = query.trim();
    const since = Math.floor((this.clock.now() - DAY) / HOUR) * HOUR;
    let select = this.db
      .selectFrom("apps")
      .leftJoin("users", "users.id", "apps.owner_user_id")
      .leftJoin("app_storage_usage", "app_storage_usage.app_id", "apps.id")
      .select((eb) => [
        "apps.id",
        "apps.display_name",
        "apps.manifest_id",
        "apps.owner_user_id",
        "apps.claimed_at",
        "apps.created_at",
        "apps.suspended_at",
        "apps.suspended_reason",
        "users.handle",
        "users.suspended_at as owner_suspended_at",
        "users.suspended_reason as owner_suspended_reason",
        "app_storage_usage.bytes",
        eb.selectFrom("op_call_counts").select((sub) => sub.fn.sum<number>("op_call_counts.calls").as("n")).whereRef("op_call_counts.app_id", "=", "apps.id").where("op_call_counts.hour", ">=", since).as("calls"),
        eb.selectFrom("op_call_counts").select((sub) => sub.fn.sum<number>("op_call_counts.failures").as("n")).whereRef("op_call_counts.app_id", "=", "apps.id").where("op_call_counts.hour", ">=", since).as("failures"),
      ]);
    if (q.toLowerCase() === "anonymous") select = select.where("apps.owner_user_id", "is", null);
    else if (q !== "") {
      select = select.where((eb) =>
        eb.or([eb("apps.id", "=", q), contains("apps.display_name", q), contains("apps.manifest_id", q), eb("users.handle", "=", q.replace(/^@/, ""))]),
      );
    }
    const rows = await select.orderBy(exactFirst(sql.ref("apps.id"), q)).orderBy("apps.created_at", "desc").limit(LISTING_LIMIT).execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.display_name,
      manifestId: row.manifest_id,
      ownerHandle: row.handle,
      ownerId: row.owner_user_id,
      claimedAt: row.claimed_at === null ? null : Number(row.claimed_at),
      createdAt: Number(row.created_at),
      storedBytes: Number(row.bytes ?? 0),
      lastDay: { calls: Number(row.calls ?? 0), failures: Number(row.failures ?? 0) },
      suspension:
        row.suspended_at !== null
          ? { of: "app", at: Number(row.suspended_at), reason: row.suspended_reason ?? "" }
          : row.owner_suspended_at !== null
            ? { of: "owner", at: Number(row.owner_suspended_at), reason: row.owner_suspended_reason ?? "" }
            : null,
    }));
  }
}

/**
 * Sorts the row that `column` names exactly before the ones that merely contain the text: the
 * listing keeps the newest 50, and anyone may name 50 new apps after another app's id (or sign
 * up handles containing another's), which would push the one an operator looks for off the page.
 */
function exactFirst(column: RawBuilder<unknown>, q: string): RawBuilder<number> {
  return sql<number>`case when ${column} = ${q} then 0 else 1 end`;
}
