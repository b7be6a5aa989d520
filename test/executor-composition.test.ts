import { expect, it } from "vitest";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer } from "./helpers/server.ts";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describeEachDialect("executor: composition in buildApp", (dialect) => {
  it("starts EXECUTORS processes, reports /healthz ok once they answer, and kills them on close", async () => {
    const server = await startServer({ dialect, env: { EXECUTORS: "2" } });
    let pids: number[] = [];
    try {
      const health = await server.client.get("/healthz");
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ ok: true });
      pids = Array.from({ length: 20 }, (_, i) => `app-${i}`)
        .map((id) => server.ctx.executor.pool.processOf(id)?.pid)
        .filter((pid): pid is number => pid !== undefined);
      pids = [...new Set(pids)];
      expect(pids.length).toBe(2);
      for (const pid of pids) expect(alive(pid)).toBe(true);
      const error = await server.ctx.operations
        .call({ app: { id: "no-code", revision: 1, manifest: { routes: { x: {} } } }, role: "owner", op: "x", input: {}, trigger: "http", userId: null })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ kind: "operation_failed", status: 500 });
    } finally {
      await server.close();
    }
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });
});
