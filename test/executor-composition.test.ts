import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { systemClock } from "../src/config/clock.ts";
import { DiagRing } from "../src/domain/diagnostics/index.ts";
import { Executor } from "../src/runtime/executor/executor.ts";
import { WorkerdStartupError } from "../src/runtime/executor/process.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer } from "./helpers/server.ts";
import { alive } from "./helpers/process.ts";

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
      // An app whose code the store cannot give: the executor's failure, not the app's, and none of it ran.
      expect(error).toMatchObject({ kind: "executor_error", status: 503, fields: { details: { execution: "not_started", reason: "unavailable" } } });
    } finally {
      await server.close();
    }
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });
});

describe("executor: startup failures are typed", () => {
  it("turns workerd's refusal of its config into a WorkerdStartupError carrying stderr, and leaves nothing running", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "brickyard-startup-"));
    try {
      const error = await Executor.start({
        dataDir,
        processes: 1,
        code: { load: () => Promise.resolve(null) },
        storage: {} as never,
        log: new DiagRing(systemClock),
        clock: systemClock,
        tuning: { compatibilityDate: "2999-01-01", startupTimeoutMs: 10_000 },
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorkerdStartupError);
      expect(["config_invalid", "exited"]).toContain((error as WorkerdStartupError).failure);
      expect((error as WorkerdStartupError).stderr).toMatch(/compatibility/i);
      // The private executor directory is removed again.
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
