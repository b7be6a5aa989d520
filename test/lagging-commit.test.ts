import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LaggingCommit, migrate, openStore, type Store } from "../src/store/index.ts";

// SQLite only: PostgreSQL commits delivery records through GroupCommit (see DeliveryLog).
describe("lagging commits (SQLite)", () => {
  let dir: string;
  let store: Store;
  const statements: string[] = [];
  const synchronous = async (db: Store["db"]) => Number((await sql<{ synchronous: number }>`pragma synchronous`.execute(db)).rows[0]?.synchronous);
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "brickyard-lagging-"));
    store = openStore({ databaseUrl: null, dataDir: dir, log: (event) => void statements.push(event.query.sql) });
    await migrate(store);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs its transaction without a sync of its own and gives the connection back at FULL", async () => {
    const lagging = new LaggingCommit(store.db, 3_600_000);
    let inside = -1;
    await lagging.run(async (trx) => {
      inside = Number((await sql<{ synchronous: number }>`pragma synchronous`.execute(trx)).rows[0]?.synchronous);
      await trx.insertInto("leases").values({ name: "lagging", holder: "test", next_at: 0, claimed_at: 0 }).execute();
    });
    // 1 is NORMAL (no fsync at commit in WAL mode), 2 is FULL (open.ts).
    expect(inside).toBe(1);
    expect(await synchronous(store.db)).toBe(2);
    expect(await store.db.selectFrom("leases").select("holder").where("name", "=", "lagging").executeTakeFirst()).toEqual({ holder: "test" });
    // A transaction that fails still gives the connection back at FULL.
    await expect(lagging.run(() => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    expect(await synchronous(store.db)).toBe(2);
    await lagging.close();
  });

  it("syncs the WAL by a checkpoint within its bound, and at close", async () => {
    const checkpoints = () => statements.filter((s) => s.includes("wal_checkpoint")).length;
    const lagging = new LaggingCommit(store.db, 50);
    const before = checkpoints();
    await lagging.run(async (trx) => void (await trx.insertInto("leases").values({ name: "lagging-2", holder: "test", next_at: 0, claimed_at: 0 }).execute()));
    await vi.waitFor(() => expect(checkpoints()).toBe(before + 1), { timeout: 5000, interval: 10 });

    const later = new LaggingCommit(store.db, 3_600_000);
    await later.run(async (trx) => void (await trx.insertInto("leases").values({ name: "lagging-3", holder: "test", next_at: 0, claimed_at: 0 }).execute()));
    expect(checkpoints()).toBe(before + 1);
    await later.close();
    expect(checkpoints()).toBe(before + 2);
    // Nothing left to sync: closing again checkpoints nothing.
    await later.close();
    expect(checkpoints()).toBe(before + 2);
  });
});
