import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY, HOUR, ManualClock } from "../src/config/clock.ts";
import { Activity, authorizeActivity, CallCounts, authorizeDiag, DiagRing, parseActivityQuery, type DiagnosticsCaller } from "../src/domain/diagnostics/index.ts";
import type { AppRecord } from "../src/domain/apps/queries.ts";
import { ApiError } from "../src/errors/index.ts";
import { migrate, openStore, type Store } from "../src/store/index.ts";
import { createTestDatabase, describeEachDialect } from "./helpers/dialects.ts";
import { insertApp } from "./helpers/store.ts";

describeEachDialect("diagnostics: activity events and the diag ring", (dialect) => {
  let store: Store;
  let dir: string;
  let drop: (() => Promise<void>) | undefined;
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
  let activity: Activity;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "brickyard-activity-"));
    const database = dialect === "postgres" ? await createTestDatabase() : null;
    drop = database?.drop;
    store = openStore({ databaseUrl: database?.url ?? null, dataDir: dir });
    await migrate(store);
    // The apps these rows belong to: the sweeps take the recent rows of apps that are gone.
    for (const id of ["app-1", "app-c", "other"]) await insertApp(store, id);
    activity = new Activity(store.db, clock);
  });
  afterAll(async () => {
    await store.close();
    await drop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps 1,000 events per app, kind and UTC day, redacts tokens, and lists newest first", async () => {
    const token = "svc_app_" + "A".repeat(43) + "abcdef";
    for (let i = 0; i < 1005; i++) {
      clock.advance(1);
      await activity.record("app-1", "api_proxy_result", 3, `call ${i} with ${token}`, { op: "x", stack: "at app.js:1:1", message: `token ${token}` });
    }
    await activity.record("app-1", "contract_validation", 3, "output mismatch", { op: "x" });
    const all = await activity.list("app-1", { kinds: ["api_proxy_result"], since: null, limit: 500 });
    expect(all).toHaveLength(500);
    expect(all[0]?.summary).toBe("call 999 with [redacted]");
    expect(all[0]?.data).toEqual({ op: "x", message: "token [redacted]" });
    expect(JSON.stringify(all)).not.toContain(token);
    const counted = await store.db.selectFrom("activity_events").select((eb) => eb.fn.countAll<number>().as("n")).where("kind", "=", "api_proxy_result").executeTakeFirst();
    expect(Number(counted?.n)).toBe(1000);
    const contract = await activity.list("app-1", { kinds: ["contract_validation"], since: null, limit: 10 });
    expect(contract.map((e) => e.kind)).toEqual(["contract_validation"]);

    // A new UTC day has a fresh cap; since filters; the sweep drops what is past 90 days.
    clock.advance(DAY);
    expect(await activity.record("app-1", "api_proxy_result", 3, "next day", {})).toBe(true);
    const since = await activity.list("app-1", { kinds: null, since: clock.now() - 1000, limit: 100 });
    expect(since.map((e) => e.summary)).toEqual(["next day"]);
    clock.advance(90 * DAY);
    await activity.record("app-1", "diag_report", 4, "fresh", {});
    // An app deleted while a call of its was recording (on another instance, say): its rows go too.
    await activity.record("gone-app", "api_proxy_result", 1, "written after its deletion", {});
    expect((await activity.sweep()).events).toBe(1002);
    expect((await activity.list("app-1", { kinds: null, since: null, limit: 100 })).map((e) => e.summary)).toEqual(["fresh", "next day"]);
    expect(await activity.list("gone-app", { kinds: null, since: null, limit: 100 })).toEqual([]);
    const counters = await store.db.selectFrom("activity_counts").select("app_id").distinct().execute();
    expect(counters.map((r) => r.app_id)).toEqual(["app-1"]);
  });

  it("validates the activity query", () => {
    expect(parseActivityQuery({})).toEqual({ kinds: null, since: null, limit: 100 });
    expect(parseActivityQuery({ kinds: "diag_report,api_proxy_result", since: "2026-01-01T00:00:00Z", limit: "500" })).toEqual({
      kinds: ["diag_report", "api_proxy_result"],
      since: Date.UTC(2026, 0, 1),
      limit: 500,
    });
    for (const bad of [{ kinds: "nope" }, { since: "yesterday" }, { limit: "0" }, { limit: "501" }, { limit: "1.5" }]) {
      expect(() => parseActivityQuery(bad)).toThrow(ApiError);
    }
  });

  it("keeps 50 diag entries per app, most recent first", () => {
    const ring = new DiagRing(clock);
    for (let i = 0; i < 60; i++) ring.push("app-2", { message: `m${i}`, source: "app.js", line: i, col: 1, stack: "" });
    const entries = ring.list("app-2");
    expect(entries).toHaveLength(50);
    expect(entries[0]?.message).toBe("m59");
    expect(entries[49]?.message).toBe("m10");
    expect(ring.list("other")).toEqual([]);
  });

  it("holds at most its total of characters across apps: the app that wrote longest ago loses its ring", () => {
    // Each entry: 24 characters of timestamp, 1,000 of message, 6 of source.
    const entry = (n: number) => ({ message: String(n % 10).repeat(1000), source: "app.js", line: n, col: 1, stack: "" });
    const ring = new DiagRing(clock, 10_000);
    for (let i = 0; i < 3; i++) ring.push("first", entry(i));
    for (let i = 0; i < 3; i++) ring.push("second", entry(i));
    // "first" writes again: now "second" is the one written to longest ago.
    ring.push("first", entry(3));
    expect(ring.chars).toBe(7 * 1030);
    for (let i = 0; i < 3; i++) ring.push("third", entry(i));
    expect(ring.list("second")).toEqual([]);
    expect(ring.list("first")).toHaveLength(4);
    expect(ring.list("third")).toHaveLength(3);
    expect(ring.chars).toBe(7 * 1030);
    ring.drop("first");
    expect(ring.chars).toBe(3 * 1030);
    // An app's own 50-entry cap frees what it pushes out; alone past the total, an app keeps its ring.
    for (let i = 0; i < 60; i++) ring.push("third", entry(i));
    expect(ring.list("third")).toHaveLength(50);
    expect(ring.list("third")[0]?.line).toBe(59);
    expect(ring.chars).toBe(50 * 1030);
    ring.push("fourth", { ...entry(0), source: "s".repeat(10_000), stack: "x".repeat(20_000) });
    expect(ring.list("third")).toEqual([]);
    expect(ring.list("fourth")[0]?.source).toHaveLength(500);
  });

  it("applies the spec's auth rules to diag and activity reads", async () => {
    const claimed = { id: "app-x", ownerUserId: "owner" };
    const anonymous = { id: "app-x", ownerUserId: null };
    const callers: Record<string, DiagnosticsCaller> = {
      none: null,
      appToken: { kind: "app", appId: "app-x" },
      otherAppToken: { kind: "app", appId: "app-y" },
      ownerToken: { kind: "user", userId: "owner", via: "token" },
      strangerToken: { kind: "user", userId: "stranger", via: "token" },
      ownerRender: { kind: "render", appId: "app-x", userId: "owner" },
      visitorRender: { kind: "render", appId: "app-x", userId: null },
      claimCookie: { kind: "claim_cookie", appId: "app-x" },
    };
    // The owner's rights, as Apps.roleOf decides them for a personal app (teams: permissions.test.ts).
    const oracle = { roleOf: (actor: { userId: string }, app: { ownerUserId: string | null }) => Promise.resolve(actor.userId === app.ownerUserId ? ("owner" as const) : null) };
    const outcome = async (check: typeof authorizeDiag, caller: DiagnosticsCaller, app: typeof claimed | typeof anonymous) => {
      try {
        await check(caller, app as unknown as AppRecord, oracle);
        return 200;
      } catch (error) {
        return (error as ApiError).status;
      }
    };
    const table = Object.fromEntries(
      await Promise.all(
        Object.entries(callers).map(async ([name, caller]) => [
          name,
          await Promise.all([outcome(authorizeDiag, caller, claimed), outcome(authorizeActivity, caller, claimed), outcome(authorizeDiag, caller, anonymous), outcome(authorizeActivity, caller, anonymous)]),
        ]),
      ),
    );
    expect(table).toEqual({
      none: [401, 401, 401, 401],
      appToken: [200, 200, 200, 200],
      otherAppToken: [403, 403, 403, 403],
      ownerToken: [200, 200, 403, 403],
      strangerToken: [403, 403, 403, 403],
      ownerRender: [200, 403, 403, 403],
      visitorRender: [403, 403, 403, 403],
      claimCookie: [403, 403, 403, 403],
    });
  });

  it("counts op calls per hour in memory, and instances' flushes add up in the store", async () => {
    const hour = Math.floor(clock.now() / HOUR) * HOUR;
    // Two instances on one store; the interval is long so only explicit flushes write.
    const a = new CallCounts(store.db, clock, HOUR);
    const b = new CallCounts(store.db, clock, HOUR);
    a.count("app-c", false);
    a.count("app-c", true);
    b.count("app-c", true);
    b.count("other", false);
    expect(await a.perHour("app-c", 0)).toEqual(new Map([[hour, { calls: 2, failures: 1 }]]));
    await a.flush();
    await b.flush();
    // Flushed twice into one row; a flush with nothing counted writes nothing.
    await a.flush();
    expect(await a.perHour("app-c", 0)).toEqual(new Map([[hour, { calls: 3, failures: 2 }]]));
    clock.advance(HOUR);
    b.count("app-c", false);
    expect(await b.perHour("app-c", hour + 1)).toEqual(new Map([[hour + HOUR, { calls: 1, failures: 0 }]]));
    await b.close();
    await a.close();
    expect([...(await a.perHour("app-c", 0)).keys()]).toEqual([hour, hour + HOUR]);
    expect((await a.perHour("other", 0)).get(hour)).toEqual({ calls: 1, failures: 0 });
    // Eight days on, the first hour is swept; a deleted app loses its rows.
    clock.advance(8 * DAY - HOUR + 1);
    // And the hours a flush added for an app that is gone.
    a.count("gone-app", false);
    await a.flush();
    expect((await a.perHour("gone-app", 0)).size).toBe(1);
    await a.sweep();
    expect([...(await a.perHour("app-c", 0)).keys()]).toEqual([hour + HOUR]);
    expect((await a.perHour("gone-app", 0)).size).toBe(0);
    await a.dropApp("app-c");
    expect((await a.perHour("app-c", 0)).size).toBe(0);
  });
});
