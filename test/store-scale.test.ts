import { randomUUID } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../src/store/index.ts";
import { makeUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { fullScans, queryRecorder, type RecordedQuery } from "./helpers/query-plans.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const USERS = 1000;
const APPS_EACH = 100;
const ROUNDS = 80;
/** Tables that grow with the number of apps and users: none may be read whole on these paths. */
const GROWING = ["apps", "app_versions", "users", "tokens", "app_shares", "team_members"];

const MODULE = `export const manifest = {
  id: "scale-called",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { ping: { access: "read" } },
};
export default { async fetch(request, env) { return Response.json({ ok: true, value: (await env.KV.get("n")) ?? 0 }); } };
`;

type AppRow = Awaited<ReturnType<typeof appRow>>;
type VersionRow = Awaited<ReturnType<typeof versionRow>>;
const appRow = (db: Kysely<Database>, id: string) => db.selectFrom("apps").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
const versionRow = (db: Kysely<Database>, id: string) => db.selectFrom("app_versions").selectAll().where("app_id", "=", id).executeTakeFirstOrThrow();

/** `count` apps of `owner` like `app` (one revision each), older than it, in batches. */
async function seedApps(db: Kysely<Database>, owner: string, count: number, app: AppRow, version: VersionRow): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; done += 500) {
    const rows = Array.from({ length: Math.min(500, count - done) }, (_, i) => ({ ...app, id: randomUUID(), owner_user_id: owner, manifest_id: `seeded-${done + i}`, created_at: app.created_at - 1000 * (done + i + 1) }));
    await db.insertInto("apps").values(rows).execute();
    ids.push(...rows.map((row) => row.id));
    await db
      .insertInto("app_versions")
      .values(rows.map((row) => ({ ...version, app_id: row.id })))
      .execute();
  }
  return ids;
}

/** 999 more users with 100 apps each, a user token each, one share each; every tenth is a team of the nine after it. */
async function seedWorld(db: Kysely<Database>, app: AppRow, version: VersionRow): Promise<void> {
  const now = Date.now();
  for (let first = 1; first < USERS; first += 100) {
    const users = Array.from({ length: Math.min(100, USERS - first) }, (_, i) => {
      const n = first + i;
      return { id: randomUUID(), email: `scale-${n}@example.test`, handle: `scale-${n}`, password_hash: "-", created_at: now, kind: n % 10 === 0 ? ("team" as const) : ("person" as const) };
    });
    await db.insertInto("users").values(users).execute();
    const tokens = users.map((user) => ({ id: randomUUID(), kind: "user" as const, hash: randomUUID(), prefix: "svc_user_", name: null, source: "minted" as const, user_id: user.id, app_id: null, created_at: now, expires_at: null, revoked_at: null, revoked_reason: null }));
    await db.insertInto("tokens").values(tokens).execute();
    const ids: string[][] = [];
    for (const user of users) ids.push(await seedApps(db, user.id, APPS_EACH, app, version));
    const shares = users.slice(1).map((user, i) => ({ id: randomUUID(), app_id: ids[i]?.[0] ?? "", grantee_user_id: user.id, grantee_email: null, role: "viewer" as const, status: "accepted" as const, invited_by: users[i]?.id ?? "", created_at: now, expires_at: now + 86_400_000, accepted_at: now, link_id: null }));
    await db.insertInto("app_shares").values(shares).execute();
    // A person joins the team account at or before it in the same ten (scale-10 has scale-11…19).
    const members = users.flatMap((user, i) => {
      const team = users[i - ((first + i) % 10)];
      return user.kind === "team" || team === undefined ? [] : [{ team_id: team.id, user_id: user.id, role: "member" as const, created_at: now }];
    });
    if (members.length > 0) await db.insertInto("team_members").values(members).execute();
  }
}

/** Median milliseconds of listing and of calling, over ROUNDS interleaved rounds. */
async function medians(list: () => Promise<void>, call: () => Promise<void>): Promise<{ list: number; call: number }> {
  const times = { list: [] as number[], call: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of [["list", list], ["call", call]] as const) {
      const started = performance.now();
      await run();
      times[name].push(performance.now() - started);
    }
  }
  const median = (list: number[]) => list.sort((x, y) => x - y)[Math.floor(list.length / 2)] ?? 0;
  return { list: median(times.list), call: median(times.call) };
}

// Issue 21: the per-user and per-call paths stay index lookups however many apps the service holds.
describeEachDialect("100,000 apps across 1,000 users", (dialect) => {
  const recorder = queryRecorder();
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, queryLog: recorder.log });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("GET /app for one user and an op call on one app read no growing table whole, and take about as long as with 100 apps", { timeout: 600_000 }, async () => {
    const db = server.ctx.store.db;
    const owner = await makeUser(server);
    const created = await server.client.post("/app", { module: MODULE }, { token: owner.token });
    expect(created.status).toBe(201);
    const called: string = created.body.id;
    const [app, version] = [await appRow(db, called), await versionRow(db, called)];
    await seedApps(db, owner.id, APPS_EACH - 1, app, version);

    const list = async () => {
      const res = await server.client.get("/app", { token: owner.token });
      expect(res.status).toBe(200);
      expect(res.body.apps).toHaveLength(50);
    };
    const call = async () => {
      const res = await server.client.post(`/app/${called}/api/ping`, {}, { token: owner.token });
      expect(res.body).toEqual({ ok: true, value: 0 });
    };
    const small = await medians(list, call);

    await seedWorld(db, app, version);
    const total = await db.selectFrom("apps").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    expect(Number(total.n)).toBe(USERS * APPS_EACH);
    // As autovacuum would have by now on PostgreSQL; SQLite plans as deployed, without statistics.
    if (dialect === "postgres") await sql`analyze`.execute(db);

    const large = await medians(list, call);
    const ratio = (name: "list" | "call") => `${small[name].toFixed(2)} → ${large[name].toFixed(2)} ms (×${(large[name] / small[name]).toFixed(2)})`;
    console.warn(`[${dialect}] 100 → 100,000 apps, median of ${ROUNDS}: GET /app ${ratio("list")}, op call ${ratio("call")}`);

    const scans = async (queries: RecordedQuery[]) => (await Promise.all(queries.map(async (q) => (await fullScans(db, dialect, q, GROWING)).map((table) => `${table}: ${q.sql}`)))).flat();
    const listQueries = await recorder.record(list);
    const callQueries = await recorder.record(call);
    expect(listQueries.some((q) => /from "apps"/.test(q.sql))).toBe(true);
    expect(await scans(listQueries)).toEqual([]);
    expect(await scans(callQueries)).toEqual([]);
    // The owner's plan and age and the secrets version come with the app's row: an op call reads
    // no account and no secrets on its own.
    expect(callQueries.filter((q) => /from "(users|secrets|secret_versions)"/.test(q.sql)).map((q) => q.sql)).toEqual([]);
    // Nor its token: the row read at an earlier call stands while the token epoch read with the
    // app has not moved (migration 022).
    expect(callQueries.filter((q) => /from "tokens"/.test(q.sql)).map((q) => q.sql)).toEqual([]);
  });
});
