import { afterAll, beforeAll, expect, it } from "vitest";
import { HOUR, type ManualClock } from "../src/config/clock.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const SLOW_MS = 1_000;
const slowModule = (id: string) => `export const manifest = { id: ${JSON.stringify(id)}, routes: { a: { access: "write" }, b: { access: "write" } } };
export default { async fetch() { await new Promise((resolve) => setTimeout(resolve, ${SLOW_MS})); return Response.json({ ok: true, value: null }); } };`;
const FAST = `export const manifest = { id: "prompt", routes: { ping: { access: "write" } } };
export default { async fetch() { return Response.json({ ok: true, value: "pong" }); } };`;

/**
 * A tick ran the due routines four at a time, first due first, and the scheduler waited for all
 * of them: one owner's slow routines, due first, held another's due routine for whole rounds of
 * theirs, and every other job (sweeps, the reaper) for the lot. Runs now start without the tick
 * waiting, at most two of one owner's at once, owners taken in turn.
 */
describeEachDialect("routine runs shared between owners", (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let slow: FixtureUser;
  let prompt: FixtureUser;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    clock = server.clock as ManualClock;
    [slow, prompt] = [await makeUser(server), await makeUser(server)];
  });
  afterAll(async () => server.close());

  const outcomes = async (ids: string[]) =>
    (await server.ctx.db.selectFrom("routines").select(["id", "last_outcome"]).where("id", "in", ids).execute()).filter((r) => r.last_outcome !== null).map((r) => r.id);

  it("one owner's slow routines, due first, hold neither the tick nor another owner's due routine", async () => {
    const slowIds: string[] = [];
    for (const id of ["slow-1", "slow-2"]) {
      const app = await server.client.post("/app", { module: slowModule(id) }, { token: slow.token });
      expect(app.status, JSON.stringify(app.body)).toBe(201);
      for (const op of ["a", "b"]) slowIds.push((await server.client.post(`/api/v1/apps/${app.body.id}/routines`, { op, interval: "hourly" }, { token: slow.token })).body.routine.id as string);
    }
    clock.advance(1_000);
    const app = await server.client.post("/app", { module: FAST }, { token: prompt.token });
    const routine = (await server.client.post(`/api/v1/apps/${app.body.id}/routines`, { op: "ping", interval: "hourly" }, { token: prompt.token })).body.routine.id as string;

    clock.advance(HOUR + 1_000);
    expect(await server.ctx.scheduler.tick()).toContain("routines");
    // The tick is back before any slow routine has finished.
    expect(await outcomes(slowIds)).toEqual([]);
    // The prompt owner's routine runs beside the slow ones, not after a round of them.
    await expect.poll(() => outcomes([routine]), { timeout: 10_000 }).toEqual([routine]);
    expect(await outcomes(slowIds)).toEqual([]);
    // All four slow ones still run, two at a time.
    await server.ctx.routines.settled();
    expect((await outcomes(slowIds)).sort()).toEqual([...slowIds].sort());
  });
});
