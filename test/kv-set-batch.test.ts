import { setImmediate as nextTurn } from "node:timers/promises";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { APP_CAP_BYTES } from "../src/runtime/storage/index.ts";
import { ApiError } from "../src/errors/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { lockUsageRows } from "../src/store/locks.ts";
import { exactUsage, startHarness, type Harness } from "./helpers/executor.ts";
import { openTransaction, untilSomeoneWaitsOnALock } from "./helpers/pg-locks.ts";

/**
 * Single-key KV writes asked within one turn (the write-behind commits of concurrent ops): on
 * PostgreSQL they go as one statement and one transaction (KvSetBatch, migration 023); on both
 * stores each keeps its own outcome, in the order asked.
 */
describeEachDialect("KV writes of one turn", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect });
  });
  afterAll(async () => h.close());

  it("all land, the later of two writes to one key wins, and every app's usage stays exact", async () => {
    const apps = ["turn-a", "turn-b", "turn-c"];
    const writes = apps.flatMap((appId) => Array.from({ length: 4 }, (_, i) => h.storage.kvSet(appId, `k${i}`, JSON.stringify(`${appId}-${i}`.repeat(i + 1)))));
    writes.push(h.storage.kvSet("turn-a", "k0", JSON.stringify("second")));
    await Promise.all(writes);
    expect(await h.storage.kvGet("turn-a", "k0")).toBe(JSON.stringify("second"));
    expect(await h.storage.kvGet("turn-b", "k3")).toBe(JSON.stringify("turn-b-3".repeat(4)));
    for (const appId of apps) expect(await h.storage.usage(appId)).toBe(await exactUsage(h, appId));
    if (dialect === "postgres") {
      // One transaction wrote them all (rows a transaction writes carry its id as xmin), and
      // each write bumped its app's data version once.
      const xmins = await sql<{ n: string }>`select count(distinct xmin::text) as n from app_kv where app_id in ('turn-a', 'turn-b', 'turn-c')`.execute(h.store.db);
      expect(Number(xmins.rows[0]?.n)).toBe(1);
      const versions = await h.store.db.selectFrom("app_storage_usage").select(["app_id", "data_version"]).where("app_id", "in", apps).orderBy("app_id").execute();
      expect(versions.map((v) => [v.app_id, Number(v.data_version)])).toEqual([
        ["turn-a", 5],
        ["turn-b", 4],
        ["turn-c", 4],
      ]);
    }
  });

  it("a write past its app's cap is refused alone; the others of its turn land", async () => {
    await h.storage.kvSet("turn-full", "seed", JSON.stringify("x"));
    // The app is 5 bytes short of its cap: no 10-byte write fits.
    await h.store.db.updateTable("app_storage_usage").set({ bytes: APP_CAP_BYTES - 5 }).where("app_id", "=", "turn-full").execute();
    const outcomes = await Promise.allSettled([
      h.storage.kvSet("turn-ok", "one", JSON.stringify("fits")),
      h.storage.kvSet("turn-full", "big", JSON.stringify("12345678")),
      h.storage.kvSet("turn-ok", "two", JSON.stringify("fits too")),
      h.storage.kvSet("turn-full", "seed", JSON.stringify("y")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    const refused = (outcomes[1] as PromiseRejectedResult).reason as ApiError;
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused.status).toBe(413);
    expect(refused.kind).toBe("storage_full");
    expect(await h.storage.kvGet("turn-full", "big")).toBeNull();
    expect(await h.storage.kvGet("turn-full", "seed")).toBe(JSON.stringify("y"));
    expect(await h.storage.kvGet("turn-ok", "two")).toBe(JSON.stringify("fits too"));
    expect(await h.storage.usage("turn-ok")).toBe(await exactUsage(h, "turn-ok"));
    // Nothing of the refused write counted: a same-size overwrite left the total where it was.
    expect(await h.storage.usage("turn-full")).toBe(APP_CAP_BYTES - 5);
  });

  it("a write the store cannot take fails alone: the other writes of its turn land", async () => {
    // PostgreSQL's text cannot hold U+0000, and app code chooses its keys; SQLite can.
    const outcomes = await Promise.allSettled([
      h.storage.kvSet("turn-nul", "order", JSON.stringify("first")),
      h.storage.kvSet("turn-nul", "a\u0000b", JSON.stringify(1)),
      h.storage.kvSet("turn-innocent", "k", JSON.stringify("landed")),
      h.storage.kvSet("turn-nul", "plain", JSON.stringify(2)),
      h.storage.kvSet("turn-nul", "order", JSON.stringify("second")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", dialect === "postgres" ? "rejected" : "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    expect(await h.storage.kvGet("turn-innocent", "k")).toBe(JSON.stringify("landed"));
    expect(await h.storage.kvGet("turn-nul", "plain")).toBe(JSON.stringify(2));
    // Sent again one by one, one app's writes still go in the order asked: the later of a key's wins.
    expect(await h.storage.kvGet("turn-nul", "order")).toBe(JSON.stringify("second"));
    expect(await h.storage.usage("turn-nul")).toBe(await exactUsage(h, "turn-nul"));
  });

  // PostgreSQL serializes one app's writes on its usage row anyway: while one is in flight, the
  // app's next writes wait in Node and then go as one statement (TurnQueue's oneRunBy), where
  // each turn's had gone on its own and queued on the row lock, a transaction and a commit each.
  it.skipIf(dialect !== "postgres")("holds an app's writes while its write is in flight, then sends them together; another app's write does not wait", async () => {
    await h.storage.kvSet("turn-held", "seed", JSON.stringify(0));
    const holder = openTransaction(h.store.db, (trx) => lockUsageRows(trx, "postgres", ["turn-held"]));
    await holder.ready;
    const first = h.storage.kvSet("turn-held", "k1", JSON.stringify(1));
    await untilSomeoneWaitsOnALock(h.store.db);
    const second = h.storage.kvSet("turn-held", "k2", JSON.stringify(2));
    await nextTurn();
    const third = h.storage.kvSet("turn-held", "k3", JSON.stringify(3));
    // Another app's write asked in the turn of a held one goes without it: it lands while the
    // held app's row is still locked (in one statement with k3, it would wait on that row).
    await h.storage.kvSet("turn-free", "k", JSON.stringify("landed"));
    const running = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state = 'active' and query like '%brickyard_kv_set%'`.execute(h.store.db);
    expect(running.rows[0]?.n).toBe(1);
    holder.release();
    await holder.done;
    await Promise.all([first, second, third]);
    const xmins = await sql<{ key: string; xmin: string }>`select key, xmin::text as xmin from app_kv where app_id = 'turn-held' and key like 'k%' order by key`.execute(h.store.db);
    const [k1, k2, k3] = xmins.rows.map((row) => row.xmin);
    expect(k2).toBe(k3);
    expect(k1).not.toBe(k2);
    const usage = await h.store.db.selectFrom("app_storage_usage").select(["data_version"]).where("app_id", "=", "turn-held").executeTakeFirstOrThrow();
    expect(Number(usage.data_version)).toBe(4);
    expect(await h.storage.usage("turn-held")).toBe(await exactUsage(h, "turn-held"));
  });
});
