import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pg from "pg";
import { pino } from "pino";
import { describe, expect, inject, it } from "vitest";
import { openStore } from "../src/store/index.ts";
import { PgNotifier } from "../src/store/notify.ts";
import { createTestDatabase } from "./helpers/dialects.ts";
import { within } from "./helpers/eventually.ts";

const adminUrl = inject("pgAdminUrl");
const suite = adminUrl === null ? describe.skip : describe;

/**
 * Live events travel through NOTIFY even on the instance that sends them: an instance whose
 * listening connection stays down hears none, its own included. A PostgreSQL restart outlasts
 * the first reconnect; the notifier had stopped trying after that one failed.
 */
suite(`LISTEN across a PostgreSQL outage${adminUrl === null ? " — SKIPPED: PostgreSQL unreachable" : ""}`, () => {
  it("keeps reconnecting while the database refuses connections, and hears notifications again once it is back", { timeout: 30_000 }, async () => {
    const database = await createTestDatabase();
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-notify-"));
    const store = openStore({ databaseUrl: database.url, dataDir });
    const admin = new pg.Client({ connectionString: adminUrl ?? "" });
    await admin.connect();
    const name = new URL(database.url).pathname.slice(1);
    let refused = () => {};
    const reconnectRefused = new Promise<void>((resolve) => (refused = resolve));
    const log = pino(
      { level: "warn" },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          if ((JSON.parse(chunk.toString()) as { msg?: string }).msg === "LISTEN reconnect failed") refused();
          done();
        },
      }),
    );
    const notifier = new PgNotifier(database.url, store.db, log);
    const heard: string[] = [];
    const listening = async () => (await admin.query("select pid from pg_stat_activity where datname = $1 and query ilike 'listen %'", [name])).rows as { pid: number }[];
    try {
      await notifier.listen((payload) => heard.push(payload));
      await notifier.notify("before");
      await within(5000, () => Promise.resolve(heard), (h) => h.includes("before"));

      // The outage: no new connections, and the listening one dropped.
      await admin.query(`alter database "${name}" allow_connections false`);
      for (const { pid } of await listening()) await admin.query("select pg_terminate_backend($1)", [pid]);
      await reconnectRefused;
      expect(await listening()).toEqual([]);
      await admin.query(`alter database "${name}" allow_connections true`);

      // The next attempt, later than the first, listens again.
      await within(15_000, listening, (rows) => rows.length === 1);
      await notifier.notify("after");
      await within(5000, () => Promise.resolve(heard), (h) => h.includes("after"));
      expect(heard).toEqual(["before", "after"]);
    } finally {
      await admin.query(`alter database "${name}" allow_connections true`);
      await admin.end();
      await notifier.close();
      await store.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
