import { randomBytes } from "node:crypto";
import pg from "pg";
import { describe, inject } from "vitest";
import type { Dialect } from "../../src/store/index.ts";

/**
 * Runs a store-backed suite once on SQLite and once on PostgreSQL. When PostgreSQL is not
 * reachable the PostgreSQL half is registered as skipped, so the report says so.
 */
export function describeEachDialect(name: string, suite: (dialect: Dialect) => void): void {
  describe(`${name} [sqlite]`, () => suite("sqlite"));
  if (inject("pgAdminUrl") === null) {
    describe.skip(`${name} [postgres] — SKIPPED: PostgreSQL unreachable`, () => suite("postgres"));
  } else {
    describe(`${name} [postgres]`, () => suite("postgres"));
  }
}

/** Creates a throwaway database and returns its URL and a dropper. */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject("pgAdminUrl");
  if (adminUrl === null) throw new Error("PostgreSQL is unreachable; this test should have been skipped");
  const name = `${inject("pgRunPrefix")}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
