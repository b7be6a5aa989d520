import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Kysely } from "kysely";
import { migrate, openStore, type Database, type Dialect, type Store, type StoreOptions } from "../../src/store/index.ts";
import { createTestDatabase } from "./dialects.ts";

export interface TestStore extends Store {
  dataDir: string;
  /** A second, independent connection to the same database, as another instance would have. */
  openAnother(): Store;
  dispose(): Promise<void>;
}

/**
 * A migrated store of the given dialect in its own directory or database, for domain-level tests
 * (unmigrated with `migrate: false`, for migration tests).
 */
export async function openTestStore(dialect: Dialect, options: { migrate?: boolean; log?: StoreOptions["log"] } = {}): Promise<TestStore> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-store-"));
  const database = dialect === "postgres" ? await createTestDatabase() : null;
  const store = openStore({ databaseUrl: database?.url ?? null, dataDir, ...(options.log === undefined ? {} : { log: options.log }) });
  if (options.migrate !== false) await migrate(store);
  return {
    ...store,
    dataDir,
    openAnother: () => openStore({ databaseUrl: database?.url ?? null, dataDir }),
    async dispose() {
      await store.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A bare row in `apps` (no revision stored), for domain tests whose rows must name an app that exists. */
export async function insertApp(store: { db: Kysely<Database> }, id: string = randomUUID(), owner: { userId: string; manifestId: string } | null = null): Promise<string> {
  const now = Date.now();
  await store.db
    .insertInto("apps")
    .values({
      id,
      manifest_id: owner?.manifestId ?? `m-${id}`,
      display_name: "visited",
      owner_user_id: owner?.userId ?? null,
      claimed_at: owner === null ? null : now,
      expires_at: null,
      revision: 1,
      manifest: "{}",
      icon_override: null,
      starter_prompt: null,
      copied_from: null,
      created_at: now,
      updated_at: now,
      suspended_at: null,
      suspended_reason: null,
    })
    .execute();
  return id;
}
