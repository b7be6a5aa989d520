import type { Kysely, Transaction } from "kysely";
import type { ApiError } from "../errors/index.ts";
import { isUniqueViolation, type Database, type Dialect } from "../store/index.ts";
import { lockOwnerRow } from "../store/owner-lock.ts";

type Trx = Transaction<Database>;

export interface CappedInsert {
  dialect: Dialect;
  /** Whose plan caps apply: the app owner's. */
  ownerId: string;
  /** The id of an existing row this one would duplicate, or null. */
  findDuplicate(trx: Trx): Promise<string | null>;
  duplicate(existingId: string | null): ApiError;
  /** Checked in order; the first count at or over its max refuses with its error. */
  caps: { count(trx: Trx): Promise<number>; max: number; refusal(): ApiError }[];
  insert(trx: Trx): Promise<void>;
}

/**
 * Inserts a per-app row that plan caps count (a routine, a webhook) under the owner's lock, so
 * concurrent creates can neither pass a cap nor add a duplicate; a duplicate that slips in
 * between instances is caught by the unique index and answered the same way.
 */
export async function insertWithinCaps(db: Kysely<Database>, c: CappedInsert): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await lockOwnerRow(trx, c.dialect, c.ownerId);
      const existing = await c.findDuplicate(trx);
      if (existing !== null) throw c.duplicate(existing);
      for (const cap of c.caps) if ((await cap.count(trx)) >= cap.max) throw cap.refusal();
      await c.insert(trx);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw c.duplicate(null);
    throw error;
  }
}
