import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HOUR, type ManualClock } from "../src/config/clock.ts";
import { callAsOwner, createOwnedApp } from "./helpers/automation.ts";
import { makeUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const HOURS = 6;
const reachable = inject("pgAdminUrl") !== null;

// Two complete instances (HTTP server, scheduler, workerd) sharing one PostgreSQL database and one
// clock, as two processes of a deployment would.
(reachable ? describe : describe.skip)(`routines across two instances on one PostgreSQL${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startServer({ dialect: "postgres", clock: "manual" });
    const databaseUrl = a.config.databaseUrl;
    if (databaseUrl === null) throw new Error("instance A has no PostgreSQL URL");
    // Not "postgres": that would make a second database; this one joins A's.
    b = await startServer({ env: { DATABASE_URL: databaseUrl }, clock: a.clock });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it("runs each routine slot exactly once while both instances tick at the same moments", async () => {
    const clock = a.clock as ManualClock;
    const owner = await makeUser(a);
    const apps: string[] = [];
    for (let i = 0; i < 3; i++) {
      const appId = await createOwnedApp(a, owner.token, `multi-${i}`);
      // Created on either instance; both see it.
      const via = i % 2 === 0 ? a : b;
      expect((await via.client.post(`/api/v1/apps/${appId}/routines`, { op: "tick", interval: "hourly" }, { token: owner.token })).status).toBe(201);
      apps.push(appId);
    }

    let ranDirect = 0;
    for (let hour = 0; hour < HOURS; hour++) {
      clock.advance(HOUR);
      const now = clock.now();
      // The routine job straight from both instances (bypassing the scheduler's lease, so only the
      // per-routine conditional UPDATE stands between them), and both schedulers as well.
      const [ranA, ranB] = await Promise.all([a.ctx.routines.runDue(now), b.ctx.routines.runDue(now), a.ctx.scheduler.tick(), b.ctx.scheduler.tick(), a.ctx.routines.runDue(now)]);
      ranDirect += ranA + ranB;
      // The schedulers' ticks started their runs without waiting for them.
      await Promise.all([a.ctx.routines.settled(), b.ctx.routines.settled()]);
    }
    for (const appId of apps) expect(await callAsOwner(a, owner.token, appId, "count")).toEqual({ ticks: HOURS });
    expect(ranDirect).toBeLessThanOrEqual(HOURS * apps.length);

    const listed = (await b.client.get("/api/v1/routines", { token: owner.token })).body.routines;
    for (const routine of listed) expect(routine).toMatchObject({ last_outcome: "success", missed_runs: 0, consecutive_failures: 0, last_run_at: new Date(clock.now()).toISOString() });
  });
});
