import { expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { LogCapture } from "./helpers/logs.ts";
import { startServer } from "./helpers/server.ts";
import { SLOW_REQUEST_MS } from "../src/http/logging.ts";

it("never logs a token, password or session id", async () => {
  const logs = new LogCapture();
  const server = await startServer({ logStream: logs, env: { LOG_LEVEL: "trace" } });
  try {
    const user = await createUser(server);
    const minted = await server.client.post("/api/token", { name: "ci" }, { token: user.token });
    await server.client.get("/api/me", { token: minted.body.token });
    await server.client.post("/api/auth/login", { login: user.handle, password: user.password });
    await server.client.post("/api/auth/login", { login: user.handle, password: "wrong password here" });
    // Credentials in query strings (?t= render tokens, ?key= webhook secrets) are redacted too.
    await server.client.get(`/api/me?t=${minted.body.token}&key=svc_hook_abc&v=visitorid.passmac&other=visible`);
    // A signed asset URL's sig reads the asset with nothing else, for a day.
    await server.client.get(`/api/me?exp=1&sig=0123456789abcdef-asset-hmac&state=nonce-of-a-sign-in`);
    await server.client.delete(`/api/token/${minted.body.id}`, { token: user.token });
    await server.client.get("/api/me", { token: minted.body.token });

    const text = logs.text;
    expect(text).toContain("/api/me?t=[redacted]&key=[redacted]&v=[redacted]&other=visible");
    expect(text).toContain("/api/me?exp=1&sig=[redacted]&state=[redacted]");
    expect(text).not.toContain("asset-hmac");
    expect(logs.lines().filter((line) => line.msg === "request answered").length).toBeGreaterThan(5);
    expect(text).not.toMatch(/svc_(user|app|render|hook)_/);
    expect(text).not.toContain(user.password);
    expect(text).not.toContain("wrong password here");
    expect(text).not.toContain(user.cookie.split("=")[1]);
  } finally {
    await server.close();
  }
});

it("logs answered requests at debug, so the default level stays quiet, and a slow one at warn with its redacted URL", async () => {
  const logs = new LogCapture();
  const server = await startServer({ logStream: logs, env: { LOG_LEVEL: "info" } });
  try {
    for (let i = 0; i < 5; i++) expect((await server.client.get("/healthz")).status).toBe(200);
    expect(logs.lines().filter((line) => line.req !== undefined)).toEqual([]);

    const module = `export const manifest = { id: "slow-op", routes: { rest: {} } };
export default { async fetch() { await new Promise((resolve) => setTimeout(resolve, ${SLOW_REQUEST_MS + 100})); return Response.json({ ok: true, value: "rested" }); } };`;
    const created = await server.client.post("/app", { module });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const rested = await server.client.post(`/app/${created.body.id}/api/rest?t=svc_render_secret`, {}, { token: created.body.token });
    expect(rested.body, JSON.stringify(rested.body)).toEqual({ ok: true, value: "rested" });
    const slow = logs.lines().filter((line) => line.req !== undefined);
    expect(slow).toHaveLength(1);
    expect(slow[0]).toMatchObject({ level: 40, msg: "request answered", statusCode: 200, req: { method: "POST", url: `/app/${created.body.id}/api/rest?t=[redacted]` } });
    expect(slow[0]?.ms).toBeGreaterThanOrEqual(SLOW_REQUEST_MS);
    // The request's logger is made only when it logs (LazyRequestLogger), with its id bound.
    expect(slow[0]?.reqId).toBe(rested.headers.get("x-request-id"));
  } finally {
    await server.close();
  }
});
