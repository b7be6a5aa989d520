import { afterAll, beforeAll, expect, it } from "vitest";
import { HOUR, MINUTE, type ManualClock } from "../src/config/clock.ts";
import { callAsOwner, createOwnedApp } from "./helpers/automation.ts";
import { createAnonymousApp, expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const ROUTINE_ID = /^routine_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describeEachDialect("routines API", (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let owner: FixtureUser;
  let stranger: FixtureUser;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    clock = server.clock as ManualClock;
    owner = await makeUser(server);
    stranger = await makeUser(server);
  });
  afterAll(async () => server.close());

  const create = (token: string, appId: string, body: unknown) => server.client.post(`/api/v1/apps/${appId}/routines`, body, { token });
  /** Moves past the scheduler's lease period as well, so the next tick claims the routine job. */
  const tickAfter = async (ms: number) => {
    clock.advance(ms);
    return tickAndSettle();
  };
  /** A tick, and the routine runs it started (it does not wait for them). */
  const tickAndSettle = async () => {
    const ran = await server.ctx.scheduler.tick();
    await server.ctx.routines.settled();
    return ran;
  };

  it("creates a routine with every field of the spec's table; first next_run_at = creation + interval", async () => {
    const appId = await createOwnedApp(server, owner.token, "create-fields");
    const before = clock.now();
    const res = await create(owner.token, appId, { op: "tick", interval: "hourly" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const routine = res.body.routine;
    expect(routine.id).toMatch(ROUTINE_ID);
    expect(routine).toEqual({
      id: routine.id,
      app_id: appId,
      op: "tick",
      interval: "hourly",
      enabled: true,
      disabled_reason: null,
      next_run_at: new Date(before + HOUR).toISOString(),
      last_run_at: null,
      last_outcome: null,
      last_error: null,
      consecutive_failures: 0,
      missed_runs: 0,
      created_at: new Date(before).toISOString(),
    });
    // An op whose inputs are all optional is fine: a routine sends {}.
    expect((await create(owner.token, appId, { op: "optional", interval: "weekly" })).status).toBe(201);

    const one = await server.client.get(`/api/v1/routines/${routine.id}`, { token: owner.token });
    expect(one.body).toEqual({ ok: true, routine });
    const perApp = await server.client.get(`/api/v1/apps/${appId}/routines`, { token: owner.token });
    expect(perApp.body.routines.map((r: { op: string }) => r.op).sort()).toEqual(["optional", "tick"]);
    const all = await server.client.get("/api/v1/routines", { token: owner.token });
    expect(all.status).toBe(200);
    expect(all.body.routines.map((r: { id: string }) => r.id)).toContain(routine.id);
    expect(all.body.limits).toEqual({ plan: "free", routines_per_app: 3, routines_per_owner: 25, used: all.body.routines.length });
  });

  it("refuses bad input, unknown ops, ops needing input, duplicates and callers without app:write", async () => {
    const appId = await createOwnedApp(server, owner.token, "create-errors");
    expectError(await create(owner.token, appId, { op: "tick", interval: "minutely" }), 400, "invalid_interval");
    expectError(await create(owner.token, appId, { op: "tick", interval: "" }), 400, "invalid_interval");
    expectError(await create(owner.token, appId, { op: "nope", interval: "daily" }), 404, "unknown_operation");
    expectError(await create(owner.token, appId, { op: "needs", interval: "daily" }), 400, "op_requires_input");
    expectError(await create(owner.token, appId, { interval: "daily" }), 400, "invalid_request");
    expectError(await create(owner.token, appId, { op: "tick", interval: "daily", extra: 1 }), 400, "invalid_request");
    expectError(await create(owner.token, appId, { op: "tick", interval: 3 }), 400, "invalid_request");
    expectError(await create(owner.token, "not-a-uuid", { op: "tick", interval: "daily" }), 400, "invalid_id");
    expectError(await create(owner.token, "00000000-0000-4000-8000-000000000000", { op: "tick", interval: "daily" }), 404, "app_not_found");
    expectError(await server.client.post(`/api/v1/apps/${appId}/routines`, { op: "tick", interval: "daily" }), 401, "sign_in_required");
    expectError(await create(stranger.token, appId, { op: "tick", interval: "daily" }), 403, "forbidden");

    const anon = await createAnonymousApp(server, "anon-routine");
    expectError(await create(anon.token, anon.id, { op: "hello", interval: "daily" }), 401, "unauthorized");
    expectError(await create(owner.token, anon.id, { op: "hello", interval: "daily" }), 403, "app_unclaimed");

    expect((await create(owner.token, appId, { op: "tick", interval: "daily" })).status).toBe(201);
    expectError(await create(owner.token, appId, { op: "tick", interval: "hourly" }), 409, "duplicate_routine");
    expectError(await server.client.get(`/api/v1/apps/${appId}/routines`, { token: stranger.token }), 403, "forbidden");
  });

  it("caps routines per app and per owner from the owner's plan with a plan refusal", async () => {
    const capped = await makeUser(server);
    const apps: string[] = [];
    for (let i = 0; i < 9; i++) apps.push(await createOwnedApp(server, capped.token, `cap-${i}`));
    const [first] = apps;
    if (first === undefined) throw new Error("no app");
    for (const op of ["tick", "flaky", "optional"]) expect((await create(capped.token, first, { op, interval: "daily" })).status).toBe(201);
    const perApp = expectError(await create(capped.token, first, { op: "count", interval: "daily" }), 429, "routine_limit_exceeded");
    expect(perApp).toMatchObject({ plan: "free", limit: "routines_per_app", max: 3, upgradeUrl: `${server.config.baseUrl}/@${capped.handle}/billing` });

    let made = 3;
    for (const appId of apps.slice(1)) {
      for (const op of ["tick", "flaky", "optional"]) {
        if (made === 25) break;
        expect((await create(capped.token, appId, { op, interval: "daily" })).status).toBe(201);
        made++;
      }
    }
    const last = apps[8] ?? "";
    const perOwner = expectError(await create(capped.token, last, { op: "optional", interval: "daily" }), 429, "routine_limit_exceeded");
    expect(perOwner).toMatchObject({ plan: "free", limit: "routines_per_owner", max: 25 });
    const listed = await server.client.get("/api/v1/routines", { token: capped.token });
    expect(listed.body.limits).toEqual({ plan: "free", routines_per_app: 3, routines_per_owner: 25, used: 25 });

    // A paid plan lifts both caps.
    await server.ctx.users.setPlan(capped.handle, "pro");
    expect((await create(capped.token, last, { op: "optional", interval: "daily" })).status).toBe(201);
    expect((await create(capped.token, first, { op: "count", interval: "daily" })).status).toBe(201);
  });

  it("holds the per-app cap under concurrent creates", async () => {
    const racer = await makeUser(server);
    const appId = await createOwnedApp(server, racer.token, "cap-race");
    const ops = ["tick", "flaky", "optional", "count", "whoami", "slow"];
    const results = await Promise.all(ops.map((op) => create(racer.token, appId, { op, interval: "daily" })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429]);
    for (const r of results.filter((x) => x.status === 429)) expectError(r, 429, "routine_limit_exceeded");
    expect((await server.client.get(`/api/v1/apps/${appId}/routines`, { token: racer.token })).body.routines).toHaveLength(3);
  });

  it("ticks on schedule: runs the op with {} as the app, skips missed slots, counts them", async () => {
    const appId = await createOwnedApp(server, owner.token, "ticking");
    const created = (await create(owner.token, appId, { op: "tick", interval: "hourly" })).body.routine;
    const start = Date.parse(created.next_run_at) - HOUR;

    await tickAfter(59 * MINUTE);
    expect(await callAsOwner(server, owner.token, appId, "count")).toEqual({ ticks: 0 });
    await tickAfter(MINUTE);
    expect(await callAsOwner(server, owner.token, appId, "count")).toEqual({ ticks: 1 });
    let routine = (await server.client.get(`/api/v1/routines/${created.id}`, { token: owner.token })).body.routine;
    expect(routine).toMatchObject({
      last_outcome: "success",
      last_error: null,
      last_run_at: new Date(start + HOUR).toISOString(),
      next_run_at: new Date(start + 2 * HOUR).toISOString(),
      missed_runs: 0,
    });
    // A second tick within the same slot does nothing.
    await tickAfter(MINUTE);
    expect(await callAsOwner(server, owner.token, appId, "count")).toEqual({ ticks: 1 });

    // Down for 3.5 hours: one run, the slots at +2h, +3h and +4h… are skipped, not replayed.
    clock.set(start + 4 * HOUR + 30 * MINUTE);
    await tickAndSettle();
    expect(await callAsOwner(server, owner.token, appId, "count")).toEqual({ ticks: 2 });
    routine = (await server.client.get(`/api/v1/routines/${created.id}`, { token: owner.token })).body.routine;
    expect(routine).toMatchObject({ next_run_at: new Date(start + 5 * HOUR).toISOString(), missed_runs: 2 });
  });

  it("disable keeps the schedule hidden; re-enable restores next_run_at unchanged", async () => {
    const appId = await createOwnedApp(server, owner.token, "toggling");
    const created = (await create(owner.token, appId, { op: "tick", interval: "daily" })).body.routine;
    const off = await server.client.patch(`/api/v1/routines/${created.id}`, { enabled: false }, { token: owner.token });
    expect(off.status).toBe(200);
    expect(off.body.routine).toMatchObject({ enabled: false, disabled_reason: "owner", next_run_at: null });
    // Disabling twice is a no-op.
    expect((await server.client.patch(`/api/v1/routines/${created.id}`, { enabled: false }, { token: owner.token })).body.routine.disabled_reason).toBe("owner");

    const on = await server.client.patch(`/api/v1/routines/${created.id}`, { enabled: true }, { token: owner.token });
    expect(on.body.routine).toMatchObject({ enabled: true, disabled_reason: null, next_run_at: created.next_run_at, consecutive_failures: 0 });

    // A disabled routine does not tick.
    await server.client.patch(`/api/v1/routines/${created.id}`, { enabled: false }, { token: owner.token });
    await tickAfter(25 * HOUR);
    expect(await callAsOwner(server, owner.token, appId, "count")).toEqual({ ticks: 0 });
    // Re-enabled after its slot passed: the same next_run_at shows, and the next tick runs it.
    const late = await server.client.patch(`/api/v1/routines/${created.id}`, { enabled: true }, { token: owner.token });
    expect(late.body.routine.next_run_at).toBe(created.next_run_at);
    await tickAfter(MINUTE);
    expect(await callAsOwner(server, owner.token, appId, "count")).toEqual({ ticks: 1 });

    const changed = await server.client.patch(`/api/v1/routines/${created.id}`, { interval: "weekly" }, { token: owner.token });
    expect(changed.body.routine).toMatchObject({ interval: "weekly", next_run_at: new Date(clock.now() + 7 * 24 * HOUR).toISOString() });
    expectError(await server.client.patch(`/api/v1/routines/${created.id}`, { interval: "every-minute" }, { token: owner.token }), 400, "invalid_interval");
    expectError(await server.client.patch(`/api/v1/routines/${created.id}`, { enabled: "yes" }, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.patch(`/api/v1/routines/${created.id}`, { paused: true }, { token: owner.token }), 400, "invalid_request");
  });

  it("auto-disables after 5 consecutive failed ticks; re-enable resets the counter and restores the schedule", async () => {
    const appId = await createOwnedApp(server, owner.token, "failing");
    await callAsOwner(server, owner.token, appId, "setFail", { fail: true });
    const created = (await create(owner.token, appId, { op: "flaky", interval: "hourly" })).body.routine;
    const url = `/api/v1/routines/${created.id}`;
    for (let i = 1; i <= 4; i++) {
      await tickAfter(HOUR);
      const r = (await server.client.get(url, { token: owner.token })).body.routine;
      expect(r).toMatchObject({ enabled: true, consecutive_failures: i, last_outcome: "failure" });
    }
    await tickAfter(HOUR);
    const disabled = (await server.client.get(url, { token: owner.token })).body.routine;
    expect(disabled).toMatchObject({
      enabled: false,
      disabled_reason: "auto",
      next_run_at: null,
      consecutive_failures: 5,
      last_outcome: "failure",
      last_error: { kind: "operation_failed", message: "flaky is failing on purpose" },
    });
    const preserved = new Date(Date.parse(created.next_run_at) + 5 * HOUR).toISOString();

    // Auto-disabled routines stay off.
    await tickAfter(HOUR);
    expect((await server.client.get(url, { token: owner.token })).body.routine.consecutive_failures).toBe(5);

    await callAsOwner(server, owner.token, appId, "setFail", { fail: false });
    const on = (await server.client.patch(url, { enabled: true }, { token: owner.token })).body.routine;
    expect(on).toMatchObject({ enabled: true, disabled_reason: null, consecutive_failures: 0, next_run_at: preserved });
    await tickAfter(MINUTE);
    expect((await server.client.get(url, { token: owner.token })).body.routine).toMatchObject({ last_outcome: "success", last_error: null, consecutive_failures: 0 });
  });

  it("run-now counts as a tick for outcome and failures but leaves next_run_at alone", async () => {
    const appId = await createOwnedApp(server, owner.token, "run-now");
    const created = (await create(owner.token, appId, { op: "flaky", interval: "daily" })).body.routine;
    const run = await server.client.post(`/api/v1/routines/${created.id}/run`, undefined, { token: owner.token });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(run.body.result).toEqual({ ok: true, value: "fine" });
    expect(run.body.routine).toMatchObject({ last_outcome: "success", next_run_at: created.next_run_at, last_run_at: new Date(clock.now()).toISOString() });

    await callAsOwner(server, owner.token, appId, "setFail", { fail: true });
    const failed = await server.client.post(`/api/v1/routines/${created.id}/run`, undefined, { token: owner.token });
    expect(failed.body.result).toEqual({ ok: false, error: { kind: "operation_failed", message: "flaky is failing on purpose" } });
    expect(failed.body.routine).toMatchObject({ last_outcome: "failure", consecutive_failures: 1, next_run_at: created.next_run_at });
    for (let i = 0; i < 4; i++) await server.client.post(`/api/v1/routines/${created.id}/run`, undefined, { token: owner.token });
    const after = (await server.client.get(`/api/v1/routines/${created.id}`, { token: owner.token })).body.routine;
    expect(after).toMatchObject({ enabled: false, disabled_reason: "auto", consecutive_failures: 5 });

    // The op runs as the app with trigger "routine".
    const who = (await create(owner.token, appId, { op: "whoami", interval: "daily" })).body.routine;
    const whoRun = await server.client.post(`/api/v1/routines/${who.id}/run`, undefined, { token: owner.token });
    expect(whoRun.body.result.value).toEqual({ trigger: "routine", webhook: null, role: "app", user: null, body: {} });
  });

  it("answers 404 for missing routines and callers without app:write; deletes, also with the app", async () => {
    const appId = await createOwnedApp(server, owner.token, "deleting");
    const routine = (await create(owner.token, appId, { op: "tick", interval: "daily" })).body.routine;
    const url = `/api/v1/routines/${routine.id}`;
    for (const res of [
      await server.client.get(url, { token: stranger.token }),
      await server.client.patch(url, { enabled: false }, { token: stranger.token }),
      await server.client.post(`${url}/run`, undefined, { token: stranger.token }),
      await server.client.delete(url, { token: stranger.token }),
      await server.client.get("/api/v1/routines/routine_00000000-0000-4000-8000-000000000000", { token: owner.token }),
      await server.client.get("/api/v1/routines/not-a-routine", { token: owner.token }),
    ]) {
      expectError(res, 404, "not_found");
    }
    expect((await server.client.get("/api/v1/routines", { token: stranger.token })).body.routines).toEqual([]);
    expectError(await server.client.get(url), 401, "sign_in_required");

    expect((await server.client.delete(url, { token: owner.token })).body).toEqual({ ok: true });
    expectError(await server.client.get(url, { token: owner.token }), 404, "not_found");

    const kept = (await create(owner.token, appId, { op: "tick", interval: "daily" })).body.routine;
    expect((await server.client.delete(`/app/${appId}`, { token: owner.token })).status).toBe(200);
    expectError(await server.client.get(`/api/v1/routines/${kept.id}`, { token: owner.token }), 404, "not_found");
    const rows = await server.ctx.db.selectFrom("routines").select("id").where("app_id", "=", appId).execute();
    expect(rows).toEqual([]);
  });
});
