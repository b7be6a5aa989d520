import { randomInt } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, recovery } from "../../errors/index.ts";
import { isUniqueViolation, PreparedQuery, type Database, type Dialect } from "../../store/index.ts";
import { open, scopeOf, seal } from "./seal.ts";

const versionOfScope = new PreparedQuery(2, (db, ownerUserId: string, manifestId: string) =>
  db.selectFrom("secret_versions").select("version").where("owner_user_id", "=", ownerUserId).where("manifest_id", "=", manifestId),
);

export const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
export const SECRET_VALUE_CAP = 8 * 1024;
/** Secrets one app holds at most: each is up to 8 KiB sealed, and a name per credential is plenty. */
export const SECRETS_PER_APP = 100;

/** Whose secrets: an owner's, for one manifest id. */
export interface SecretScope {
  ownerUserId: string;
  manifestId: string;
}

/**
 * Write-only secrets. Values go in sealed and come out only as `env.<NAME>` for app code
 * (`valuesFor`); no method returns a value to a caller of the API.
 */
export class Secrets {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly key: Buffer,
  ) {}

  /**
   * Refuses to go on with a key that does not open the secrets the store holds. A copy started
   * without the key that sealed them (a backup restored without its SECRETS_KEY gets a freshly
   * generated key file) had run with every app's secrets unreadable, its op calls answering a
   * vague 503, while new secrets were sealed under the second key.
   */
  async assertKeyOpens(): Promise<void> {
    const row = await this.db.selectFrom("secrets").select(["owner_user_id", "manifest_id", "name", "sealed"]).limit(1).executeTakeFirst();
    if (row === undefined) return;
    try {
      open(this.key, scopeOf(row.owner_user_id, row.manifest_id, row.name), row.sealed);
    } catch {
      throw new Error(
        "the secrets key (SECRETS_KEY, or DATA_DIR/secrets.key when it is unset) does not open the secrets this database holds: start with the key they were sealed with (a backup keeps it as secrets.key beside the database, unless SECRETS_KEY was set)",
      );
    }
  }

  async names(scope: SecretScope): Promise<string[]> {
    const rows = await this.db
      .selectFrom("secrets")
      .select("name")
      .where("owner_user_id", "=", scope.ownerUserId)
      .where("manifest_id", "=", scope.manifestId)
      .orderBy("name")
      .execute();
    return rows.map((row) => row.name);
  }

  /** Creates a secret; 409 `secret_already_exists` when the name is taken in this scope. */
  async create(scope: SecretScope, name: string, value: string): Promise<void> {
    const row = this.row(scope, name, value);
    try {
      await this.db.transaction().execute(async (trx) => {
        await this.lockScope(trx, scope);
        await roomFor(trx, scope);
        await trx.insertInto("secrets").values(row).execute();
        await bumpVersion(trx, scope);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw apiError("secret_already_exists", `a secret named ${name} already exists; PUT it to replace`);
      throw error;
    }
  }

  /** Creates or replaces; returns whether it existed before. */
  async put(scope: SecretScope, name: string, value: string): Promise<{ created: boolean }> {
    const row = this.row(scope, name, value);
    try {
      return await this.db.transaction().execute(async (trx) => {
        await this.lockScope(trx, scope);
        const updated = await trx
          .updateTable("secrets")
          .set({ sealed: row.sealed, size_bytes: row.size_bytes, updated_at: row.updated_at })
          .where("owner_user_id", "=", scope.ownerUserId)
          .where("manifest_id", "=", scope.manifestId)
          .where("name", "=", name)
          .executeTakeFirst();
        if (updated.numUpdatedRows === 0n) {
          await roomFor(trx, scope);
          await trx.insertInto("secrets").values(row).execute();
        }
        await bumpVersion(trx, scope);
        return { created: updated.numUpdatedRows === 0n };
      });
    } catch (error) {
      // A concurrent PUT inserted it first: ours is the later write, so replace theirs.
      if (!isUniqueViolation(error)) throw error;
      return this.put(scope, name, value);
    }
  }

  async delete(scope: SecretScope, name: string): Promise<void> {
    checkName(name);
    await this.db.transaction().execute(async (trx) => {
      await this.lockScope(trx, scope);
      const result = await trx
        .deleteFrom("secrets")
        .where("owner_user_id", "=", scope.ownerUserId)
        .where("manifest_id", "=", scope.manifestId)
        .where("name", "=", name)
        .executeTakeFirst();
      if (result.numDeletedRows === 0n) throw apiError("secret_not_found", `no secret named ${name}`);
      await bumpVersion(trx, scope);
    });
  }

  /**
   * Moves every secret of `from` to `to` inside the caller's transaction (an app changing owner):
   * each value is opened and sealed again, since the scope is the seal's associated data. A
   * secret of the same name already at `to` (left by an app deleted there) is replaced.
   */
  async moveScope(trx: Kysely<Database>, from: SecretScope, to: SecretScope): Promise<number> {
    const rows = await trx.selectFrom("secrets").selectAll().where("owner_user_id", "=", from.ownerUserId).where("manifest_id", "=", from.manifestId).execute();
    for (const row of rows) {
      const value = open(this.key, scopeOf(from.ownerUserId, from.manifestId, row.name), row.sealed);
      await trx.deleteFrom("secrets").where("owner_user_id", "=", to.ownerUserId).where("manifest_id", "=", to.manifestId).where("name", "=", row.name).execute();
      await trx
        .insertInto("secrets")
        .values({ ...row, owner_user_id: to.ownerUserId, manifest_id: to.manifestId, sealed: seal(this.key, scopeOf(to.ownerUserId, to.manifestId, row.name), value) })
        .execute();
    }
    await trx.deleteFrom("secrets").where("owner_user_id", "=", from.ownerUserId).where("manifest_id", "=", from.manifestId).execute();
    // Both scopes changed; and the moved app must not meet, under its new owner, a version its
    // isolates ran under before (the secrets it held there were someone else's).
    await bumpVersion(trx, from);
    await bumpVersion(trx, to);
    return rows.length;
  }

  /**
   * Holds the app the scope belongs to until the write commits, and refuses if none does any
   * more: the caller read the app before this transaction, and a deletion (which empties the
   * scope) or a move to another owner (which carries it over) may have committed since. A secret
   * written after either would wait, unlisted, for the next app of that owner and manifest id.
   */
  private async lockScope(trx: Transaction<Database>, scope: SecretScope): Promise<void> {
    let query = trx.selectFrom("apps").select("id").where("owner_user_id", "=", scope.ownerUserId).where("manifest_id", "=", scope.manifestId);
    if (this.dialect === "postgres") query = query.forUpdate();
    if ((await query.executeTakeFirst()) === undefined) {
      throw apiError("app_not_found", "this app was deleted, or moved to another owner, while the secret was written; reload it and try again");
    }
  }

  /** Every secret of the scope, opened, for the executor to place in `env`. */
  async valuesFor(scope: SecretScope): Promise<Record<string, string>> {
    const rows = await this.db
      .selectFrom("secrets")
      .select(["name", "sealed"])
      .where("owner_user_id", "=", scope.ownerUserId)
      .where("manifest_id", "=", scope.manifestId)
      .execute();
    const values: Record<string, string> = {};
    for (const row of rows) values[row.name] = open(this.key, scopeOf(scope.ownerUserId, scope.manifestId, row.name), row.sealed);
    return values;
  }

  /**
   * Changes whenever any secret of the scope is written or removed (0 while it never held one).
   * The executor's isolate identity (app, revision, secrets version) includes it, so the next call
   * sees the change. An op call reads it with the app's row (`AppRecord.owner`); this is for
   * records built without reading.
   */
  async version(scope: SecretScope): Promise<number> {
    const row = await versionOfScope.takeFirst(this.db, scope.ownerUserId, scope.manifestId);
    return row === undefined ? 0 : Number(row.version);
  }

  private row(scope: SecretScope, name: string, value: string) {
    checkName(name);
    const size = Buffer.byteLength(value, "utf8");
    if (size > SECRET_VALUE_CAP) {
      throw apiError("secret_too_large", `the value is ${size} bytes; secrets hold at most ${SECRET_VALUE_CAP} bytes`, {
        recovery: recovery.shrink("secret", size, SECRET_VALUE_CAP),
      });
    }
    const now = this.clock.now();
    return {
      owner_user_id: scope.ownerUserId,
      manifest_id: scope.manifestId,
      name,
      sealed: seal(this.key, scopeOf(scope.ownerUserId, scope.manifestId, name), value),
      size_bytes: size,
      created_at: now,
      updated_at: now,
    };
  }
}

// 48 bits: an exact integer in JavaScript, and two versions of one scope colliding is negligible.
const VERSION_SPAN = 2 ** 48 - 1;

/** Draws the scope a fresh version, inside the transaction that writes its secrets. */
async function bumpVersion(trx: Kysely<Database>, scope: SecretScope): Promise<void> {
  const version = 1 + randomInt(VERSION_SPAN);
  await trx
    .insertInto("secret_versions")
    .values({ owner_user_id: scope.ownerUserId, manifest_id: scope.manifestId, version })
    .onConflict((oc) => oc.columns(["owner_user_id", "manifest_id"]).doUpdateSet({ version }))
    .execute();
}

// Capability bindings own these names in env; a secret must not shadow one.
const RESERVED = new Set(["KV", "BLOB", "LOG"]);

function checkName(name: string): void {
  if (RESERVED.has(name)) throw apiError("invalid_secret_name", `${name} is reserved for a capability binding in env`);
  if (!SECRET_NAME.test(name)) {
    throw apiError("invalid_secret_name", `secret names match ^[A-Z][A-Z0-9_]{0,63}$ (upper case, digits, underscores), got "${name.slice(0, 80)}"`);
  }
}

/** Refuses a new secret past SECRETS_PER_APP (the caller holds the scope's app: the count stands until it commits). */
async function roomFor(trx: Kysely<Database>, scope: SecretScope): Promise<void> {
  const held = await trx
    .selectFrom("secrets")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("owner_user_id", "=", scope.ownerUserId)
    .where("manifest_id", "=", scope.manifestId)
    .executeTakeFirstOrThrow();
  if (Number(held.n) >= SECRETS_PER_APP) throw apiError("invalid_request", `an app holds at most ${SECRETS_PER_APP} secrets; delete one before adding another`);
}
