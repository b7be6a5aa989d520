import { Agent, request } from "node:http";
import { afterEach, expect, it } from "vitest";
import { serverProcess, type ServerProcess } from "./helpers/server-process.ts";
import { alive, childrenOf, runs } from "./helpers/process.ts";
import { renderTokenAt } from "./helpers/web.ts";

// How the service stops, as an operator sees it: SIGTERM drains and exits, whoever is connected;
// a crash (kill -9 of Node) leaves no workerd behind.

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

let server: ServerProcess | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

it("after kill -9 of the Node process, neither its launcher nor any of its workerd processes is left 2 s later", async () => {
  server = await serverProcess("sqlite");
  await server.start();
  const pid = server.pid ?? 0;
  // workerd is the launcher's child (src/runtime/executor/launch.ts), the launcher the server's.
  const launchers = childrenOf(pid).filter((child) => runs(child, "launcher.js"));
  expect(launchers).toHaveLength(1);
  const workerds = launchers.flatMap((launcher) => childrenOf(launcher)).filter((child) => runs(child, "workerd"));
  expect(workerds.length).toBeGreaterThanOrEqual(2);
  process.kill(pid, "SIGKILL");
  expect(await waitFor(() => [...launchers, ...workerds].every((child) => !alive(child)), 2000)).toBe(true);
});

it("SIGTERM with an idle keep-alive client connected: the server closes the connection and exits", async () => {
  server = await serverProcess("sqlite");
  await server.start();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const socketClosed = new Promise<void>((resolve) => {
    const req = request(`${server?.base}/healthz`, { agent }, (res) => {
      res.resume();
      res.once("end", () => req.socket?.once("close", () => resolve()));
    });
    req.end();
  });
  // The request is answered and its socket sits idle in the agent's pool.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = Date.now();
  const exit = await server.signal("SIGTERM");
  expect(exit).toEqual({ code: 0, signal: null });
  expect(Date.now() - started).toBeLessThan(10_000);
  await socketClosed;
  agent.destroy();
});

it("SIGTERM during an op call: the call finishes with its answer, then the process exits", async () => {
  server = await serverProcess("sqlite");
  await server.start();
  const module = `export const manifest = { id: "slow", routes: { slow: {} } };
export default { async fetch() { await new Promise((resolve) => setTimeout(resolve, 1500)); return Response.json({ ok: true, value: "done" }); } };`;
  const created = await server.api("POST", "/app", { module });
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  const call = server.api("POST", `/app/${id}/api/slow`, {});
  await new Promise((resolve) => setTimeout(resolve, 300));
  const exit = server.signal("SIGTERM");
  const answered = await call;
  expect(answered.status).toBe(200);
  expect(await answered.json()).toEqual({ ok: true, value: "done" });
  expect(await exit).toEqual({ code: 0, signal: null });
});

it("SIGTERM with a grace period: /readyz turns 503 at once while requests are still served; a second signal exits now", async () => {
  server = await serverProcess("sqlite", { SHUTDOWN_GRACE_MS: "60000" });
  await server.start();
  expect((await fetch(`${server.base}/readyz`)).status).toBe(200);
  const pid = server.pid ?? 0;
  const exited = server.signal("SIGTERM");
  // Signals are asynchronous: wait until the instance says it is draining.
  let ready = await fetch(`${server.base}/readyz`);
  for (let i = 0; i < 50 && ready.status === 200; i++) ready = await fetch(`${server.base}/readyz`);
  expect(ready.status).toBe(503);
  expect(((await ready.json()) as { error: { kind: string } }).error.kind).toBe("service_busy");
  // Still serving: liveness holds and requests are answered during the grace period.
  expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
  expect((await server.api("GET", "/app")).status).toBe(200);
  const started = Date.now();
  process.kill(pid, "SIGTERM");
  expect(await exited).toEqual({ code: 1, signal: null });
  expect(Date.now() - started).toBeLessThan(5000);
});

it("SIGTERM with an event stream open: the stream ends with a short reconnect hint, then the process exits", async () => {
  server = await serverProcess("sqlite");
  await server.start();
  const module = `export const manifest = { id: "streamed", routes: { op: {} } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;
  const created = await fetch(`${server.base}/app`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ module }) });
  const { id } = (await created.json()) as { id: string };
  const stream = await fetch(`${server.base}/app/${id}/events?t=${await renderTokenAt(server.base, id)}`);
  expect(stream.status).toBe(200);
  const reader = stream.body?.getReader();
  if (reader === undefined) throw new Error("no stream body");
  let text = "";
  const decoder = new TextDecoder();
  // The stream is open once its first bytes (the normal reconnect delay) have arrived.
  while (!text.includes("retry: 2000")) text += decoder.decode((await reader.read()).value);
  const exit = server.signal("SIGTERM");
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);
  expect(text.trimEnd().endsWith("retry: 250")).toBe(true);
  expect(await exit).toEqual({ code: 0, signal: null });
});
