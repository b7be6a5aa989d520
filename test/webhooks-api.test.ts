import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY, type ManualClock } from "../src/config/clock.ts";
import { mintToken } from "../src/domain/tokens/format.ts";
import { createOwnedApp } from "./helpers/automation.ts";
import { createAnonymousApp, expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const WEBHOOK_ID = /^webhook_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SECRET = /^svc_hook_[0-9A-Za-z]{49}$/;

describeEachDialect("webhooks API and delivery", (dialect) => {
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

  const create = (token: string, appId: string, body: unknown) => server.client.post(`/api/v1/apps/${appId}/webhooks`, body, { token });
  const deliver = (id: string, body: unknown, options: { token?: string; raw?: string; query?: string } = {}) =>
    server.client.post(`/api/v1/hooks/${id}${options.query ?? ""}`, body, { ...(options.token === undefined ? {} : { token: options.token }), ...(options.raw === undefined ? {} : { raw: options.raw }) });
  const records = async (id: string) => (await server.client.get(`/api/v1/webhooks/${id}/deliveries?limit=200`, { token: owner.token })).body.deliveries;

  it("creates a webhook with every field of the spec's table, the secret once and the target from the active code", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-fields");
    const before = clock.now();
    const res = await create(owner.token, appId, { op: "needs" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const hook = res.body.webhook;
    expect(hook.id).toMatch(WEBHOOK_ID);
    expect(hook.secret).toMatch(SECRET);
    expect(hook.secret.startsWith(hook.secret_prefix)).toBe(true);
    expect(hook.secret_prefix.length).toBeLessThan(20);
    expect(hook).toEqual({
      id: hook.id,
      app_id: appId,
      op: "needs",
      name: "needs",
      url: `${server.config.baseUrl}/api/v1/hooks/${hook.id}`,
      secret_prefix: hook.secret_prefix,
      enabled: true,
      disabled_reason: null,
      last_run_at: null,
      last_outcome: null,
      last_error: null,
      consecutive_failures: 0,
      created_at: new Date(before).toISOString(),
      target: { op: "needs", input_schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }, output_schema: null },
      secret: hook.secret,
    });
    // The name defaults to the op's title, then its description, then its identifier.
    expect((await create(owner.token, appId, { op: "tick" })).body.webhook.name).toBe("Count a tick");
    expect((await create(owner.token, appId, { op: "flaky" })).body.webhook.name).toBe("Fails while the fail flag is set");
    const other = await createOwnedApp(server, owner.token, "hook-fields-2");
    expect((await create(owner.token, other, { op: "whoami", name: "x".repeat(80) })).body.webhook.name).toBe("x".repeat(80));

    const one = await server.client.get(`/api/v1/webhooks/${hook.id}`, { token: owner.token });
    const { secret: _secret, ...shown } = hook;
    expect(one.body).toEqual({ ok: true, webhook: shown });
    const all = await server.client.get("/api/v1/webhooks", { token: owner.token });
    expect(all.body.webhooks.find((w: { id: string }) => w.id === hook.id)).toEqual(shown);
    expect(all.body.limits).toEqual({ plan: "free", webhooks_per_app: 3, webhooks_per_owner: 25, used: all.body.webhooks.length });
    expect((await server.client.get(`/api/v1/apps/${appId}/webhooks`, { token: owner.token })).body.webhooks).toHaveLength(3);
  });

  it("refuses duplicates, unknown ops, bad bodies, callers without app:write, and breaches of the plan caps", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-errors");
    expect((await create(owner.token, appId, { op: "whoami" })).status).toBe(201);
    expectError(await create(owner.token, appId, { op: "whoami" }), 409, "duplicate_webhook");
    expectError(await create(owner.token, appId, { op: "nope" }), 404, "unknown_operation");
    expectError(await create(owner.token, appId, { op: "tick", name: "x".repeat(81) }), 400, "invalid_request");
    expectError(await create(owner.token, appId, { name: "no op" }), 400, "invalid_request");
    expectError(await create(owner.token, appId, { op: "tick", secret: "mine" }), 400, "invalid_request");
    expectError(await create(owner.token, "not-a-uuid", { op: "tick" }), 400, "invalid_id");
    expectError(await create(stranger.token, appId, { op: "tick" }), 403, "forbidden");
    expectError(await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "tick" }), 401, "sign_in_required");
    const anon = await createAnonymousApp(server, "anon-hook");
    expectError(await create(anon.token, anon.id, { op: "hello" }), 401, "unauthorized");
    expectError(await create(owner.token, anon.id, { op: "hello" }), 403, "app_unclaimed");

    const capped = await makeUser(server);
    const apps: string[] = [];
    for (let i = 0; i < 9; i++) apps.push(await createOwnedApp(server, capped.token, `hook-cap-${i}`));
    const ops = ["tick", "flaky", "whoami"];
    for (const op of ops) expect((await create(capped.token, apps[0] ?? "", { op })).status).toBe(201);
    const perApp = expectError(await create(capped.token, apps[0] ?? "", { op: "count" }), 429, "webhook_limit_exceeded");
    expect(perApp).toMatchObject({ plan: "free", limit: "webhooks_per_app", max: 3, upgradeUrl: `${server.config.baseUrl}/@${capped.handle}/billing` });
    let made = 3;
    for (const id of apps.slice(1)) {
      for (const op of ops) if (made < 25 && (await create(capped.token, id, { op })).status === 201) made++;
    }
    expect(made).toBe(25);
    const perOwner = expectError(await create(capped.token, apps[8] ?? "", { op: "count" }), 429, "webhook_limit_exceeded");
    expect(perOwner).toMatchObject({ plan: "free", limit: "webhooks_per_owner", max: 25 });
    await server.ctx.users.setPlan(capped.handle, "pro");
    expect((await create(capped.token, apps[8] ?? "", { op: "count" })).status).toBe(201);
  });

  it("delivers a JSON object to the op as the app with the webhook headers, by Bearer or ?key=", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-deliver");
    const hook = (await create(owner.token, appId, { op: "whoami" })).body.webhook;
    const res = await deliver(hook.id, { hello: "world", n: [1, 2] }, { token: hook.secret });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: true, value: { trigger: "webhook", webhook: hook.id, role: "app", user: null, body: { hello: "world", n: [1, 2] } } });
    expect(res.headers.get("ratelimit-limit")).not.toBeNull();
    expect(res.headers.get("retry-after")).toBeNull();
    const byKey = await deliver(hook.id, { via: "query" }, { query: `?key=${hook.secret}` });
    expect(byKey.status, JSON.stringify(byKey.body)).toBe(200);
    expect(byKey.body.value.body).toEqual({ via: "query" });
    // A sender that labels JSON as text still gets through: the body is parsed, not the label.
    const labelled = await server.client.post(`/api/v1/hooks/${hook.id}`, undefined, { token: hook.secret, raw: '{"a":1}', headers: { "content-type": "text/plain" } });
    expect(labelled.body.value.body).toEqual({ a: 1 });
    const after = (await server.client.get(`/api/v1/webhooks/${hook.id}`, { token: owner.token })).body.webhook;
    expect(after).toMatchObject({ last_outcome: "success", last_run_at: new Date(clock.now()).toISOString(), consecutive_failures: 0, last_error: null });
  });

  it("answers every delivery with the rate-limit headers of its tighter bucket", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-headers");
    const hook = (await create(owner.token, appId, { op: "whoami" })).body.webhook;
    const limitOf = (res: { headers: Headers }) => [res.headers.get("ratelimit-limit"), res.headers.get("x-ratelimit-limit")];
    // Before a secret passes, only the per-address bucket (300/min) was taken.
    expect(limitOf(await deliver("webhook_00000000-0000-4000-8000-000000000000", {}, { token: hook.secret }))).toEqual(["300", "300"]);
    expect(limitOf(await deliver(hook.id, {}, { token: mintToken("hook").plaintext }))).toEqual(["300", "300"]);
    // After it, the per-webhook bucket (120/min) has fewer left.
    const ok = await deliver(hook.id, {}, { token: hook.secret });
    expect(ok.status).toBe(200);
    expect(limitOf(ok)).toEqual(["120", "120"]);
    expect(ok.headers.get("ratelimit-remaining")).toBe("119");
  });

  it("answers 401, 403, 400 and 404 exactly as the delivery rules say, and records each refusal", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-refusals");
    const hook = (await create(owner.token, appId, { op: "needs" })).body.webhook;
    const url = `/api/v1/hooks/${hook.id}`;
    // Sent one after another, so the log's order is known.
    const cases: [() => ReturnType<typeof deliver>, number, string][] = [
      [() => deliver(hook.id, { n: 1 }), 401, "unauthorized"],
      [() => deliver(hook.id, { n: 1 }, { token: mintToken("hook").plaintext }), 401, "unauthorized"],
      [() => deliver(hook.id, { n: 1 }, { token: "svc_hook_garbage" }), 401, "unauthorized"],
      [() => deliver(hook.id, { n: 1 }, { query: "?key=wrong" }), 401, "unauthorized"],
      [() => server.client.post(url, { n: 1 }, { headers: { authorization: `Basic ${hook.secret}` } }), 401, "unauthorized"],
      [() => deliver(hook.id, undefined, { token: hook.secret, raw: "{not json" }), 400, "invalid_request"],
      [() => deliver(hook.id, [1, 2], { token: hook.secret }), 400, "invalid_request"],
      [() => deliver(hook.id, "text", { token: hook.secret }), 400, "invalid_request"],
      [() => server.client.post(url, undefined, { token: hook.secret }), 400, "invalid_request"],
      [() => deliver(hook.id, { n: "one" }, { token: hook.secret }), 400, "invalid_input"],
      [() => deliver(hook.id, {}, { token: hook.secret }), 400, "invalid_input"],
    ];
    for (const [send, status, kind] of cases) expectError(await send(), status, kind);
    expectError(await deliver("webhook_00000000-0000-4000-8000-000000000000", { n: 1 }, { token: hook.secret }), 404, "not_found");
    expectError(await deliver("nope", { n: 1 }, { token: hook.secret }), 404, "not_found");

    const log = await records(hook.id);
    expect(log).toHaveLength(cases.length);
    expect(log.map((r: { status: number; refusal: string }) => `${r.status} ${r.refusal}`).reverse()).toEqual(cases.map(([, status, kind]) => `${status} ${kind}`));
    expect(log.every((r: { outcome: string }) => r.outcome === "failure")).toBe(true);
    expect(log[0]).toMatchObject({ refusal: "invalid_input", requestBody: "{}", requestBytes: 2, requestTruncated: false });
    expect(JSON.parse(log[0].responseBody)).toMatchObject({ ok: false, error: { kind: "invalid_input" } });
    // Only deliveries that got past the secret, rate and enabled checks move the webhook's last outcome.
    const shown = (await server.client.get(`/api/v1/webhooks/${hook.id}`, { token: owner.token })).body.webhook;
    expect(shown).toMatchObject({ last_outcome: "failure", consecutive_failures: 6, last_error: { kind: "invalid_input" } });
  });

  it("PATCH renames, disables (403 webhook_disabled), enables (counter reset) and rotates the secret at once", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-patch");
    const hook = (await create(owner.token, appId, { op: "optional" })).body.webhook;
    const patch = (body: unknown, token = owner.token) => server.client.patch(`/api/v1/webhooks/${hook.id}`, body, { token });
    expectError(await deliver(hook.id, { bad: true }, { token: hook.secret }), 400, "unexpected_keys");

    const renamed = await patch({ rename: "Nightly import" });
    expect(renamed.status).toBe(200);
    expect(renamed.body.webhook).toMatchObject({ name: "Nightly import", secret_prefix: hook.secret_prefix });
    expect(renamed.body.webhook.secret).toBeUndefined();

    const off = (await patch({ enabled: false })).body.webhook;
    expect(off).toMatchObject({ enabled: false, disabled_reason: "owner", consecutive_failures: 1 });
    expectError(await deliver(hook.id, { n: 1 }, { token: hook.secret }), 403, "webhook_disabled");
    // A wrong secret is still a 401 on a disabled webhook: nothing about it is told to strangers.
    expectError(await deliver(hook.id, { n: 1 }), 401, "unauthorized");
    const on = (await patch({ enabled: true })).body.webhook;
    expect(on).toMatchObject({ enabled: true, disabled_reason: null, consecutive_failures: 0 });
    expect((await deliver(hook.id, { n: 1 }, { token: hook.secret })).status).toBe(200);

    const rotated = (await patch({ rotate_secret: true })).body.webhook;
    expect(rotated.secret).toMatch(SECRET);
    expect(rotated.secret).not.toBe(hook.secret);
    expect(rotated.secret.startsWith(rotated.secret_prefix)).toBe(true);
    expectError(await deliver(hook.id, { n: 1 }, { token: hook.secret }), 401, "unauthorized");
    expectError(await deliver(hook.id, { n: 1 }, { query: `?key=${hook.secret}` }), 401, "unauthorized");
    expect((await deliver(hook.id, { n: 1 }, { token: rotated.secret })).status).toBe(200);

    expectError(await patch({ rename: "" }), 400, "invalid_request");
    expectError(await patch({ rename: "y".repeat(81) }), 400, "invalid_request");
    expectError(await patch({ enabled: "no" }), 400, "invalid_request");
    expectError(await patch({ secret: "x" }), 400, "invalid_request");
    expectError(await patch({ enabled: false }, stranger.token), 404, "not_found");
    expectError(await server.client.patch(`/api/v1/webhooks/${hook.id}`, { enabled: false }), 401, "sign_in_required");
    expect(
      (await records(hook.id)).map((r: { status: number; refusal?: string }) => `${r.status} ${r.refusal ?? ""}`.trim()).reverse(),
    ).toEqual(["400 unexpected_keys", "403 webhook_disabled", "401 unauthorized", "200", "401 unauthorized", "401 unauthorized", "200"]);
  });

  it("records bodies capped by the owner's plan and never stores a secret or a ?key= value", async () => {
    const user = await makeUser(server);
    const appId = await createOwnedApp(server, user.token, "hook-records");
    const hook = (await create(user.token, appId, { op: "whoami" })).body.webhook;
    const big = { blob: "é".repeat(10_000), secret: hook.secret };
    const res = await deliver(hook.id, big, { query: `?key=${hook.secret}` });
    expect(res.status).toBe(200);
    const [record] = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries`, { token: user.token })).body.deliveries;
    expect(record).toMatchObject({ status: 200, outcome: "success", requestTruncated: true, responseTruncated: true });
    expect(record.requestBytes).toBe(Buffer.byteLength(JSON.stringify(big)));
    expect(Buffer.byteLength(record.requestBody)).toBeLessThanOrEqual(16 * 1024);
    expect(Buffer.byteLength(record.requestBody)).toBeGreaterThan(16 * 1024 - 4);
    expect(record.refusal).toBeUndefined();

    await server.ctx.users.setPlan(user.handle, "pro");
    const small = { note: `the secret ${hook.secret} must not be kept`, blob: "a".repeat(20_000) };
    expect((await deliver(hook.id, small, { token: hook.secret })).status).toBe(200);
    const [latest] = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries?limit=1`, { token: user.token })).body.deliveries;
    expect(latest).toMatchObject({ requestTruncated: false, responseTruncated: false });
    expect(JSON.parse(latest.requestBody).note).toBe("the secret [redacted] must not be kept");

    const rows = await server.ctx.db.selectFrom("webhook_deliveries").selectAll().where("webhook_id", "=", hook.id).execute();
    const stored = JSON.stringify(rows) + JSON.stringify(await server.ctx.db.selectFrom("webhooks").selectAll().execute());
    expect(stored).not.toContain(hook.secret);
    expect(stored).not.toContain(hook.secret.slice(9));
    expectError(await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries`, { token: owner.token }), 404, "not_found");
    expectError(await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries?limit=0`, { token: user.token }), 400, "invalid_request");
    // A leap second passes the date-time format and no Date reads it (PostgreSQL answered 500, SQLite an empty page).
    expectError(await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries?before=2099-12-31T23:59:60Z`, { token: user.token }), 400, "invalid_request");
    expect((await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries?before=2099-12-31T23:59:59Z`, { token: user.token })).body.deliveries).toHaveLength(2);
  });

  it("a delivery that meets the app's concurrent-run ceiling waits for a slot and is recorded as deferred", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-busy");
    const hook = (await create(owner.token, appId, { op: "slow" })).body.webhook;
    // Free plan: 8 runs at once. 12 deliveries of a 1.5 s op sent together: some must wait.
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => deliver(hook.id, { i, ms: 1500 }, { token: hook.secret })));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 12 }, () => 200));
    expect(results.map((r) => r.body.value.i).sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    const outcomes = (await records(hook.id)).map((r: { outcome: string }) => r.outcome);
    expect(outcomes).toHaveLength(12);
    expect(outcomes.filter((o: string) => o === "deferred").length).toBeGreaterThanOrEqual(1);
    expect(outcomes.every((o: string) => o === "deferred" || o === "success")).toBe(true);
  });

  it("deleting a webhook keeps its records to age out; deleting the app removes them", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-delete");
    const hook = (await create(owner.token, appId, { op: "whoami" })).body.webhook;
    expect((await deliver(hook.id, { a: 1 }, { token: hook.secret })).status).toBe(200);
    expectError(await server.client.delete(`/api/v1/webhooks/${hook.id}`, { token: stranger.token }), 404, "not_found");
    expect((await server.client.delete(`/api/v1/webhooks/${hook.id}`, { token: owner.token })).body).toEqual({ ok: true });
    expectError(await server.client.get(`/api/v1/webhooks/${hook.id}`, { token: owner.token }), 404, "not_found");
    expectError(await deliver(hook.id, { a: 1 }, { token: hook.secret }), 404, "not_found");
    const kept = () => server.ctx.db.selectFrom("webhook_deliveries").select("id").where("webhook_id", "=", hook.id).execute();
    expect(await kept()).toHaveLength(1);
    // The same op can have a webhook again.
    expect((await create(owner.token, appId, { op: "whoami" })).status).toBe(201);
    expect((await server.client.delete(`/app/${appId}`, { token: owner.token })).status).toBe(200);
    expect(await kept()).toHaveLength(0);
    expect(await server.ctx.db.selectFrom("webhooks").select("id").where("app_id", "=", appId).execute()).toHaveLength(0);
  });

  it("retention sweeps run as scheduler jobs: bodies go after 30 days, records after 90", async () => {
    const appId = await createOwnedApp(server, owner.token, "hook-retention");
    const hook = (await create(owner.token, appId, { op: "whoami" })).body.webhook;
    expect((await deliver(hook.id, { a: 1 }, { token: hook.secret })).status).toBe(200);
    // Records are written just after the answer (DeliveryLog); this test reads the table itself.
    await server.ctx.deliveries.settled();
    const row = () => server.ctx.db.selectFrom("webhook_deliveries").selectAll().where("webhook_id", "=", hook.id).executeTakeFirst();

    clock.advance(29 * DAY);
    expect(await server.ctx.scheduler.tick()).toEqual(expect.arrayContaining(["delivery-sweep", "activity-sweep"]));
    expect((await row())?.request_body).toBe('{"a":1}');
    clock.advance(2 * DAY);
    await server.ctx.scheduler.tick();
    expect(await row()).toMatchObject({ request_body: null, response_body: null, status: 200 });
    clock.advance(60 * DAY);
    await server.ctx.scheduler.tick();
    expect(await row()).toBeUndefined();
  });
});
