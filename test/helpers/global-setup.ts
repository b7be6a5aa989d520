import pg from "pg";
import type { TestProject } from "vitest/node";
import { findChromium, INSTALL_CHROMIUM } from "./chromium.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin connection string for throwaway test databases, or null when PostgreSQL is unreachable. */
    pgAdminUrl: string | null;
    /** Prefix of every database this run creates, so teardown can drop leftovers. */
    pgRunPrefix: string;
    /** The Chromium the browser tests drive, or null when this machine has none (they skip). */
    chromiumPath: string | null;
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
  project.provide("chromiumPath", chromium());

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

/** Finds Chromium once per run: missing, the browser tests skip with a loud line, or fail the run under BRICKYARD_REQUIRE_BROWSER=1. */
function chromium(): string | null {
  const path = findChromium();
  if (path !== null) return path;
  const where = process.env.CHROMIUM_PATH === undefined ? "/usr/bin/chromium, or chromium/chromium-browser on PATH" : `CHROMIUM_PATH=${process.env.CHROMIUM_PATH}`;
  const message = `No Chromium at ${where}: every browser test is SKIPPED (${INSTALL_CHROMIUM}).`;
  if (process.env.BRICKYARD_REQUIRE_BROWSER === "1") throw new Error(`${message} BRICKYARD_REQUIRE_BROWSER=1 makes that fatal.`);
  console.warn(`\n${"!".repeat(100)}\n${message}\n${"!".repeat(100)}\n`);
  return null;
}
