import pg from "pg";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin connection string for throwaway test databases, or null when PostgreSQL is unreachable. */
    pgAdminUrl: string | null;
    /** Prefix of every database this run creates, so teardown can drop leftovers. */
    pgRunPrefix: string;
  }
}

const ADMIN_URL = process.env.PG_TEST_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Finds PostgreSQL once per run; store tests then create their own database per server. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const prefix = `brickyard_test_${process.pid}_${Date.now().toString(36)}`;
  let reachable = false;
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("select 1");
    reachable = true;
  } catch (error) {
    const message = `PostgreSQL at ${ADMIN_URL} is unreachable (${String(error)}): every PostgreSQL half of the store tests is SKIPPED.`;
    if (process.env.BRICKYARD_REQUIRE_PG === "1") throw new Error(`${message} BRICKYARD_REQUIRE_PG=1 makes that fatal.`);
    console.warn(`\n${"!".repeat(100)}\n${message}\n${"!".repeat(100)}\n`);
  } finally {
    await client.end().catch(() => undefined);
  }
  project.provide("pgAdminUrl", reachable ? ADMIN_URL : null);
  project.provide("pgRunPrefix", prefix);

  return async () => {
    if (!reachable) return;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ datname: string }>("select datname from pg_database where datname like $1", [`${prefix}%`]);
      for (const row of rows) await admin.query(`drop database if exists "${row.datname}" with (force)`);
    } finally {
      await admin.end();
    }
  };
}
