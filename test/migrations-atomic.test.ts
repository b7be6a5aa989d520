import { Migrator, sql, type Kysely, type MigrationProvider } from "kysely";
import { afterEach, expect, it } from "vitest";
import { migrationProvider } from "../src/store/migrations/index.ts";
import { migrate, type Dialect } from "../src/store/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

// An upgrade whose migrations fail part way (a full disk, a crash, a bad statement) must leave the
// database as it was, or every later start fails on a table that "already exists".

/** The real migrations and then one that creates a table and fails after it. */
function failingAfter(dialect: Dialect): MigrationProvider {
  return {
    async getMigrations() {
      return {
        ...(await migrationProvider(dialect).getMigrations()),
        "999-half-done": {
          async up(db: Kysely<unknown>) {
            await db.schema.createTable("half_done").addColumn("id", "text").execute();
            await sql`select * from no_such_table`.execute(db);
          },
        },
      };
    },
  };
}

async function tables(store: TestStore): Promise<string[]> {
  return (await store.db.introspection.getTables()).map((table) => table.name).filter((name) => !name.startsWith("kysely_"));
}

describeEachDialect("migrations", (dialect) => {
  let store: TestStore | undefined;
  afterEach(async () => store?.dispose());

  it("that fail part way leave the database as it was, and the next start applies them", async () => {
    store = await openTestStore(dialect, { migrate: false });
    const failed = await new Migrator({ db: store.db, provider: failingAfter(dialect) }).migrateToLatest();
    expect(failed.error).toBeDefined();
    expect(await tables(store)).toEqual([]);
    expect(await store.db.selectFrom("kysely_migration" as never).selectAll().execute()).toEqual([]);

    await migrate(store);
    expect(await tables(store)).toContain("apps");
  });

  it("that fail part way on an upgrade keep what earlier starts applied", async () => {
    store = await openTestStore(dialect);
    const before = await tables(store);
    const failed = await new Migrator({ db: store.db, provider: failingAfter(dialect) }).migrateToLatest();
    expect(failed.error).toBeDefined();
    expect(await tables(store)).toEqual(before);
    expect(before).not.toContain("half_done");
  });
});
