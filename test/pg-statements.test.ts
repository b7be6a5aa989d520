import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../src/config/config.ts";
import { withStatementHooks } from "../src/store/pg-statements.ts";
import { createTestDatabase } from "./helpers/dialects.ts";

const reachable = inject("pgAdminUrl") !== null;

(reachable ? describe : describe.skip)(`PostgreSQL named statements${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let raw: pg.Pool;
  let pool: pg.Pool;
  beforeAll(async () => {
    database = await createTestDatabase();
    // One connection, so every query below meets the same server session.
    raw = new pg.Pool({ connectionString: database.url, max: 1 });
    pool = withStatementHooks(raw, { prepare: true, watch: null });
    await raw.query("create table things (id int primary key, label text)");
    await raw.query("insert into things values (1, 'one'), (2, 'two')");
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  const run = async (text: string, values: unknown[]) => {
    const client = await pool.connect();
    try {
      return await client.query(text, values);
    } finally {
      client.release();
    }
  };
  const prepared = async () => {
    const client = await pool.connect();
    try {
      return (await client.query("select name, statement from pg_prepared_statements order by name")).rows as { name: string; statement: string }[];
    } finally {
      client.release();
    }
  };

  it("prepares a parameterized statement once it repeats, and answers the same through it", async () => {
    const text = "select label from things where id = $1";
    expect((await run(text, [1])).rows).toEqual([{ label: "one" }]);
    expect(await prepared()).toEqual([]);
    expect((await run(text, [2])).rows).toEqual([{ label: "two" }]);
    expect((await run(text, [1])).rows).toEqual([{ label: "one" }]);
    expect(await prepared()).toEqual([{ name: "brickyard_0", statement: text }]);
  });

  it("runs a statement unnamed again when another session's migration changed its result type", async () => {
    const text = "select * from things where id = $1";
    await run(text, [1]);
    await run(text, [1]);
    expect((await prepared()).map((p) => p.statement)).toContain(text);
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    await other.query("alter table things add column weight int");
    await other.end();
    expect((await run(text, [1])).rows).toEqual([{ id: 1, label: "one", weight: null }]);
    expect((await run(text, [2])).rows).toEqual([{ id: 2, label: "two", weight: null }]);

    // Inside a transaction the failure stands (the transaction is aborted); the next run is unnamed.
    const inside = "select * from things where label = $1";
    await run(inside, ["one"]);
    await run(inside, ["one"]);
    const client = await pool.connect();
    try {
      const alter = new pg.Client({ connectionString: database.url });
      await alter.connect();
      await alter.query("alter table things add column colour text");
      await alter.end();
      await client.query("begin");
      await expect(client.query(inside, ["one"])).rejects.toMatchObject({ code: "0A000" });
      await client.query("rollback");
    } finally {
      client.release();
    }
    expect((await run(inside, ["two"])).rows).toEqual([{ id: 2, label: "two", weight: null, colour: null }]);
  });
});

describe("DATABASE_PREPARE", () => {
  it("is on unless set to off, and refuses anything else", () => {
    expect(loadConfig({}).databasePrepare).toBe(true);
    expect(loadConfig({ DATABASE_PREPARE: "on" }).databasePrepare).toBe(true);
    expect(loadConfig({ DATABASE_PREPARE: "off" }).databasePrepare).toBe(false);
    expect(() => loadConfig({ DATABASE_PREPARE: "false" })).toThrow("DATABASE_PREPARE must be on or off, got false");
  });
});
