import type { Kysely } from "kysely";
import type { Database } from "../store/index.ts";

/**
 * Claims the current period of a periodic job. The upsert only takes the row when the period
 * has opened (`next_at <= now`), so when several instances share a database exactly one of
 * them wins each period, with no lock held while the job runs.
 */
export async function claimPeriod(db: Kysely<Database>, name: string, holder: string, now: number, periodMs: number): Promise<boolean> {
  const result = await db
    .insertInto("leases")
    .values({ name, holder, next_at: now + periodMs, claimed_at: now })
    .onConflict((oc) =>
      oc
        .column("name")
        .doUpdateSet({ holder, next_at: now + periodMs, claimed_at: now })
        .where("leases.next_at", "<=", now),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}
