import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("accounts: signup, login, logout, me", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  it("signs up, reads /api/me by cookie and by token, logs out and in again", async () => {
    const user = await createUser(server, "alice-" + dialect);
    expect(user.cookie).toMatch(/^svc_session=/);

    const byCookie = await server.client.get("/api/me", { cookie: user.cookie });
    expect(byCookie.status).toBe(200);
    expect(byCookie.body).toMatchObject({ ok: true, user: { handle: user.handle, email: user.email, plan: "free" }, plan: "free" });
    expect(byCookie.body.limits).toMatchObject({ routines_per_app: 3, webhooks_per_owner: 25, version_history: 20 });

    const byToken = await server.client.get("/api/me", { token: user.token });
    expect(byToken.body.user.id).toBe(user.id);

    const logout = await server.client.post("/api/auth/logout", undefined, { cookie: user.cookie, headers: { origin: server.config.baseUrl } });
    expect(logout.status).toBe(200);
    const after = await server.client.get("/api/me", { cookie: user.cookie });
    expect(after.status).toBe(401);
    expect(after.body.error.kind).toBe("sign_in_required");

    const login = await server.client.post("/api/auth/login", { login: user.handle.toUpperCase(), password: user.password });
    expect(login.status).toBe(200);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    expect(cookie).not.toBe(user.cookie);
    expect((await server.client.get("/api/me", { cookie })).status).toBe(200);

    const byEmail = await server.client.post("/api/auth/login", { login: user.email, password: user.password });
    expect(byEmail.status).toBe(200);
  });

  it("refuses a wrong password, a taken handle, a bad handle and unknown fields", async () => {
    const user = await createUser(server);
    const wrong = await server.client.post("/api/auth/login", { login: user.handle, password: "not the password" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.kind).toBe("unauthorized");

    const taken = await server.client.post("/api/auth/signup", { email: "other@example.test", handle: user.handle, password: "long enough pw" });
    expect(taken.status).toBe(409);
    expect(taken.body.error.kind).toBe("handle_taken");

    const badHandle = await server.client.post("/api/auth/signup", { email: "x@example.test", handle: "Bad_Handle", password: "long enough pw" });
    expect(badHandle.status).toBe(400);
    expect(badHandle.body.error.kind).toBe("invalid_handle");

    const extra = await server.client.post("/api/auth/signup", { email: "y@example.test", handle: "yyy", password: "long enough pw", admin: true });
    expect(extra.status).toBe(400);
    expect(extra.body.error.kind).toBe("invalid_request");
    expect(extra.body.error.message).toContain("admin");
  });
});

describe("accounts: closed sign-up", () => {
  it("answers 403 forbidden when SIGNUP=closed", async () => {
    const server = await startServer({ env: { SIGNUP: "closed" } });
    try {
      const res = await server.client.post("/api/auth/signup", { email: "a@example.test", handle: "abc", password: "long enough pw" });
      expect(res.status).toBe(403);
      expect(res.body.error.kind).toBe("forbidden");
    } finally {
      await server.close();
    }
  });
});
