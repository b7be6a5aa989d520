import { SECOND, type ManualClock } from "../src/config/clock.ts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { expectError, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("pairing bound to an anonymous app", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());
  const clock = () => server.clock as ManualClock;

  it("pair: true returns a pairing; claiming the app approves it; the agent's poll yields a token that owns the app", async () => {
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("paired-app")), pair: true, label: "Claude in my terminal" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { pairing } = created.body;
    expect(pairing.user_code).toMatch(/^SVC-[A-Z2-9]{6}$/);
    expect(pairing).toMatchObject({ verification_url: `${server.config.baseUrl}/pair`, polling_interval: 5, expires_in: 600 });
    clock().advance(5 * SECOND);
    expect((await server.client.post("/api/pair/poll", { device_code: pairing.device_code })).body.status).toBe("pending");

    const person = await createUser(server);
    const claim = await server.client.post(`/app/${created.body.id}/claim`, { token: created.body.token }, { cookie: person.cookie, headers: { origin: server.config.baseUrl } });
    expect(claim.status, JSON.stringify(claim.body)).toBe(200);

    clock().advance(5 * SECOND);
    const polled = (await server.client.post("/api/pair/poll", { device_code: pairing.device_code })).body;
    expect(polled.status).toBe("approved");
    const mine = await server.client.get("/app", { token: polled.token });
    expect(mine.status).toBe(200);
    expect(mine.body.apps.map((a: { id: string; role: string }) => [a.id, a.role])).toEqual([[created.body.id, "owner"]]);
    // The app token is gone; the user token is the agent's credential now.
    expectError(await server.client.get(`/app/${created.body.id}/source`, { token: created.body.token }), 401, "unauthorized");
    expect((await server.client.get(`/app/${created.body.id}/source`, { token: polled.token })).status).toBe(200);
  });

  it("ignores pair and label on an authenticated upsert, and refuses a label over 80 characters", async () => {
    const user = await createUser(server);
    const upsert = await server.client.post("/app", { module: moduleSource(manifestOf("mine")), pair: true, label: "x" }, { token: user.token });
    expect(upsert.status).toBe(201);
    expect(upsert.body.pairing).toBeUndefined();
    expectError(await server.client.post("/app", { module: moduleSource(manifestOf("long")), pair: true, label: "x".repeat(81) }), 400, "invalid_request");
  });

  it("ends a bound pairing when its app is deleted", async () => {
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("short-lived")), pair: true });
    await server.ctx.apps.deleteById(created.body.id);
    expect((await server.client.post("/api/pair/poll", { device_code: created.body.pairing.device_code })).body.status).toBe("expired");
  });
});
