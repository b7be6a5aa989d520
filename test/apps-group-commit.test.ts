import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupCommit, migrate, openStore, type Store } from "../src/store/index.ts";
import { createAnonymousApp } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describe("apps: group commit of anonymous creates (SQLite)", () => {
  let store: Store;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "brickyard-gc-"));
    store = openStore({ databaseUrl: null, dataDir: dir });
    await migrate(store);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const insertUser = (id: string) => (trx: Store["db"]) =>
    trx.insertInto("users").values({ id, email: `${id}@x.test`, handle: id, password_hash: "x", plan: "free", created_at: 0 }).execute();

  it("commits concurrent jobs together, and a failing job fails alone", async () => {
    const writes = new GroupCommit(store.db, "sqlite");
    const jobs = Array.from({ length: 10 }, (_, i) => writes.run(insertUser(`user${i}`)));
    // A duplicate primary key: its batch rolls back, the others are re-run alone and land.
    const duplicate = writes.run(insertUser("user3"));
    const more = Array.from({ length: 5 }, (_, i) => writes.run(insertUser(`late${i}`)));
    const results = await Promise.allSettled([...jobs, duplicate, ...more]);
    expect(results.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect((await Promise.allSettled([duplicate]))[0]?.status).toBe("rejected");
    const count = await store.db.selectFrom("users").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(15);
  });
});

describeEachDialect("apps: parallel anonymous creates", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  it("30 parallel anonymous creates each get their own app and working token", async () => {
    const created = await Promise.all(Array.from({ length: 30 }, (_, i) => createAnonymousApp(server, `par-${i}`)));
    expect(new Set(created.map((c) => c.id)).size).toBe(30);
    const reads = await Promise.all(created.map((c) => server.client.get(`/app/${c.id}/source`, { token: c.token })));
    expect(reads.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 200));
    reads.forEach((r, i) => expect(r.body.module).toContain(`"par-${i}"`));
  });
});
