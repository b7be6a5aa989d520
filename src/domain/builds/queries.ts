import type { Kysely, Selectable } from "kysely";
import type { Database } from "../../store/index.ts";
import type { BuildsTable, BuildState } from "../../store/schema/builds.ts";

type Db = Kysely<Database>;
export type BuildRow = Selectable<BuildsTable>;

/** States a build can leave; the rest are terminal (spec "States and transitions → Build"). */
export const ACTIVE_STATES: readonly BuildState[] = ["queued", "resolving", "building", "validating"];

export function isActive(state: BuildState): boolean {
  return ACTIVE_STATES.includes(state);
}

export async function findBuild(db: Db, id: string): Promise<BuildRow | null> {
  return (await db.selectFrom("builds").selectAll().where("id", "=", id).executeTakeFirst()) ?? null;
}

/** How many builds wait or run: all together, those of anonymous writers, and those of `writer` (JSON of its Actor). */
export async function activeCounts(db: Db, writer: string): Promise<{ all: number; anonymous: number; writer: number }> {
  const rows = await db
    .selectFrom("builds")
    .select((eb) => [eb.fn.countAll<string | number>().as("n"), "actor"])
    .where("state", "in", ACTIVE_STATES)
    .groupBy("actor")
    .execute();
  const counts = { all: 0, anonymous: 0, writer: 0 };
  for (const row of rows) {
    counts.all += Number(row.n);
    if (row.actor === "null") counts.anonymous += Number(row.n);
    if (row.actor === writer) counts.writer += Number(row.n);
  }
  return counts;
}

/** Marks every waiting or running build of the app `superseded` (a newer write came). */
export async function supersede(db: Db, appId: string, now: number): Promise<void> {
  await db
    .updateTable("builds")
    .set({ state: "superseded", updated_at: now, finished_at: now, lease_holder: null, lease_until: null })
    .where("app_id", "=", appId)
    .where("state", "in", ACTIVE_STATES)
    .execute();
}

/**
 * Takes the oldest build nobody holds (or whose holder's lease ran out: it crashed), by a
 * conditional UPDATE, so of two instances racing for one job exactly one gets it.
 */
export async function claimNext(db: Db, holder: string, now: number, leaseMs: number): Promise<BuildRow | null> {
  const candidates = await db
    .selectFrom("builds")
    .select("id")
    .where("state", "in", ACTIVE_STATES)
    .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)]))
    .orderBy("accepted_at")
    .limit(5)
    .execute();
  for (const { id } of candidates) {
    const claimed = await db
      .updateTable("builds")
      .set((eb) => ({ lease_holder: holder, lease_until: now + leaseMs, attempts: eb("attempts", "+", 1), updated_at: now }))
      .where("id", "=", id)
      .where("state", "in", ACTIVE_STATES)
      .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)]))
      .executeTakeFirst();
    if (claimed.numUpdatedRows > 0n) return findBuild(db, id);
  }
  return null;
}

/** When the next build becomes claimable (a retry's wait, a lease running out), or null. */
export async function nextClaimableAt(db: Db): Promise<number | null> {
  const row = await db
    .selectFrom("builds")
    .select((eb) => eb.fn.min<string | number>("lease_until").as("at"))
    .where("state", "in", ACTIVE_STATES)
    .executeTakeFirst();
  return row?.at === null || row?.at === undefined ? null : Number(row.at);
}

/** Updates a build this holder still holds and that is still active; false when it lost it. */
export async function updateHeld(db: Db, id: string, holder: string, set: Partial<Omit<BuildRow, "id">>): Promise<boolean> {
  const result = await db
    .updateTable("builds")
    .set(set)
    .where("id", "=", id)
    .where("lease_holder", "=", holder)
    .where("state", "in", ACTIVE_STATES)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The revision a build already published, should its holder have died before recording it. */
export async function publishedRevision(db: Db, row: BuildRow): Promise<number | null> {
  const found = await db
    .selectFrom("app_versions")
    .select("revision")
    .where("app_id", "=", row.app_id)
    .where("build_digest", "=", row.input_digest)
    .where("created_at", ">=", row.accepted_at)
    .orderBy("revision", "desc")
    .executeTakeFirst();
  return found === undefined ? null : Number(found.revision);
}
