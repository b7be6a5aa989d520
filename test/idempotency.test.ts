import { afterAll, beforeAll, expect, it } from "vitest";
import { MINUTE, ManualClock } from "../src/config/clock.ts";
import { CLAIM_ABANDONED_MS, Idempotency } from "../src/domain/idempotency/idempotency.ts";
import { expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

const key = (k: string) => ({ headers: { "idempotency-key": k } });

describeEachDialect("Idempotency-Key on POST /app and PUT /app/{id}", (dialect) => {
  let server: TestServer;
  let registry: NpmRegistry;
  beforeAll(async () => {
    registry = await startNpmRegistry();
    server = await startServer({ dialect, env: { NPM_REGISTRY_URL: registry.url } });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
  });

  it("the same key and body replay the first answer (the same app and token); another body is 409 idempotency_conflict", async () => {
    const body = { module: moduleSource(manifestOf("idem-anon")) };
    const first = await server.client.post("/app", body, key("create-1-7f3a9c2e41b8"));
    expect(first.status).toBe(201);
    const again = await server.client.post("/app", body, key("create-1-7f3a9c2e41b8"));
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("etag")).toBe('"1"');
    const other = await server.client.post("/app", { module: moduleSource(manifestOf("idem-other")) }, key("create-1-7f3a9c2e41b8"));
    expectError(other, 409, "idempotency_conflict");
    // Sent without a token, a key anyone might pick is refused: the replay carries the app's token.
    expect(expectError(await server.client.post("/app", body, key("create-1")), 400, "invalid_request").message).toContain("at least 16 characters");
    // Without the key, the same body makes a second app.
    expect((await server.client.post("/app", body)).body.id).not.toBe(first.body.id);
  });

  it("a PUT replayed does not write a second revision; keys are per caller", async () => {
    const alice = await makeUser(server);
    const bob = await makeUser(server);
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("idem-put")) }, { token: alice.token });
    const body = { module: moduleSource(manifestOf("idem-put"), "// v2") };
    const put = () => server.client.put(`/app/${created.body.id}`, body, { token: alice.token, ...key("put-1") });
    expect((await put()).body.revision).toBe(2);
    expect((await put()).body.revision).toBe(2);
    expect((await server.client.get(`/app/${created.body.id}/source`, { token: alice.token })).body.revision).toBe(2);
    // Bob's use of the same key is his own: it is not a replay of Alice's write.
    const bobs = await server.client.post("/app", { module: moduleSource(manifestOf("idem-put")) }, { token: bob.token, ...key("put-1") });
    expect(bobs.status).toBe(201);
    expect(bobs.body.id).not.toBe(created.body.id);
  });

  it("a refused write leaves its key free for the corrected retry", async () => {
    expectError(await server.client.post("/app", { module: "export default {}" }, key("retry-1-7f3a9c2e41b8")), 400, "invalid_module");
    expect((await server.client.post("/app", { module: moduleSource(manifestOf("idem-retry")) }, key("retry-1-7f3a9c2e41b8"))).status).toBe(201);
  });

  it("a write that needs a build replays its 202 (the same build, token included) and its status says until when", async () => {
    const body = { module: `import { greet } from "npm:greet@1";\n${moduleSource(manifestOf("idem-build"))}\nexport const g = greet;` };
    const first = await server.client.post("/app", body, key("build-1-7f3a9c2e41b8"));
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.body.idempotencyExpiresAt).toEqual(expect.any(String));
    expect(Date.parse(first.body.idempotencyExpiresAt) - Date.parse(first.body.acceptedAt)).toBe(24 * 60 * 60 * 1000);
    const again = await server.client.post("/app", body, key("build-1-7f3a9c2e41b8"));
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ buildId: first.body.buildId, appId: first.body.appId, token: first.body.token });
  });

  it("a key longer than 200 characters is refused", async () => {
    const res = await server.client.post("/app", { module: moduleSource(manifestOf("idem-long")) }, key("k".repeat(201)));
    expect(res.status).toBe(400);
    expect(res.body.error.kind).toBe("invalid_request");
  });
});

describeEachDialect("Idempotency-Key claims left by a crash", (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(dialect);
  });
  afterAll(async () => store.dispose());

  it("a claim without its answer for 10 minutes frees its key; the dead claim's late answer does not overwrite the new one", async () => {
    const clock = new ManualClock(Date.now());
    const keys = new Idempotency(store.db, clock);
    const claim = (body: unknown) => keys.claim("user:crashed", "POST /app", "crash-key-7f3a9c2e41b8", body);
    const dead = await claim({ n: 1 });
    if (!("pending" in dead)) throw new Error("the first claim is pending");
    // Its instance died here. A retry meanwhile is told to wait, as while a write is under way.
    clock.advance(CLAIM_ABANDONED_MS - MINUTE);
    await expect(claim({ n: 1 })).rejects.toMatchObject({ kind: "idempotency_conflict", message: expect.stringContaining("still under way") });
    clock.advance(MINUTE);
    const taken = await claim({ n: 1 });
    if (!("pending" in taken)) throw new Error("the retry takes the key over");
    await dead.pending.complete({ status: 201, body: { from: "the dead claim" }, etag: null });
    await taken.pending.complete({ status: 201, body: { from: "the retry" }, etag: null });
    expect(await claim({ n: 1 })).toEqual({ replay: { status: 201, body: { from: "the retry" }, etag: null } });
  });
});
