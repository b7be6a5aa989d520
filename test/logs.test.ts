import { expect, it } from "vitest";
import { createUser } from "./helpers/accounts.ts";
import { LogCapture } from "./helpers/logs.ts";
import { startServer } from "./helpers/server.ts";

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
    await server.client.get(`/api/me?t=${minted.body.token}&key=svc_hook_abc&other=visible`);
    await server.client.delete(`/api/token/${minted.body.id}`, { token: user.token });
    await server.client.get("/api/me", { token: minted.body.token });

    const text = logs.text;
    expect(text).toContain("/api/me?t=[redacted]&key=[redacted]&other=visible");
    expect(logs.lines().length).toBeGreaterThan(10);
    expect(text).not.toMatch(/svc_(user|app|render|hook)_/);
    expect(text).not.toContain(user.password);
    expect(text).not.toContain("wrong password here");
    expect(text).not.toContain(user.cookie.split("=")[1]);
  } finally {
    await server.close();
  }
});
