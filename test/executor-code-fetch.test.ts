import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

// workerd's loader keeps what it built under an isolate key, a failed build included, for as
// long as the process lives. A build that failed because our store could not give its code
// (not because of the app's code) must not stay failed: the next call reads the code again.
// Executor-level (the source is the harness's), so SQLite only.
describe("executor: a failed read of an app's code is not kept", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1 });
  });
  afterAll(async () => h.close());

  it("a call whose code could not be read fails; the next call of that revision reads it and runs", async () => {
    const app = h.code.publish("flaky-source", appModule({ hi: `async () => "hi"` }), { routes: { hi: {} } });
    const errorsBefore = h.diag.list(app.id).length;
    // Both reads of the first call: Node's, sent with the run, and the supervisor's, through the internal API.
    h.code.failNext = 2;
    // Ours, not the app's: 503 executor_error, safe to retry (none of the app's code ran), and
    // nothing in the app's own error log for its author to chase.
    await expect(h.call(app, "hi")).rejects.toMatchObject({ kind: "executor_error", status: 503, fields: { details: { execution: "not_started", reason: "unavailable" } } });
    expect(h.diag.list(app.id).length).toBe(errorsBefore);
    expect(h.code.failNext).toBe(0);
    expect(await h.call(app, "hi")).toBe("hi");
    expect(await h.call(app, "hi")).toBe("hi");
  });

  it("the supervisor's read of the code (Node's failed) reads no secrets for an app that never had one", async () => {
    const app = h.code.publish("fetched-unsecret", appModule({ hi: `async () => "hi"` }), { routes: { hi: {} } });
    // Node's read, sent with the run, fails: the supervisor asks the internal API instead.
    h.code.failNext = 1;
    expect(await h.call(app, "hi")).toBe("hi");
    expect(h.code.failNext).toBe(0);
    expect(h.secretReads).not.toContain(app.id);
    const secret = { ...h.code.publish("fetched-secret", appModule({ hi: `async () => "hi"` }), { routes: { hi: {} } }), secretsVersion: 3 };
    h.code.failNext = 1;
    expect(await h.call(secret, "hi")).toBe("hi");
    expect(h.secretReads).toContain(secret.id);
  });

  it("a module that throws at its top level is not built again for every call", async () => {
    const app = h.code.publish("throws-at-load", `throw new Error("thrown at load");\n${appModule({ hi: `async () => "hi"` })}`, { routes: { hi: {} } });
    const before = h.code.loads;
    for (let i = 0; i < 3; i++) await expect(h.call(app, "hi")).rejects.toThrow("thrown at load");
    // Read once with the first run; the failed build stays, with the app's own error.
    expect(h.code.loads - before).toBe(1);
  });

  it("an isolate rebuilt after a failed read is the one evicted", async () => {
    const manifest = { routes: { count: {} } };
    // Module state lives as long as the isolate: the count says whether it was built again.
    const app = h.code.publish("flaky-then-evicted", `let calls = 0;\n${appModule({ count: "async () => ++calls" }, manifest)}`, manifest);
    h.code.failNext = 2;
    await expect(h.call(app, "count")).rejects.toMatchObject({ kind: "executor_error" });
    expect(await h.call(app, "count")).toBe(1);
    expect(await h.call(app, "count")).toBe(2);
    // A newer revision supersedes this one's isolate, which is evicted at the next tick; calling
    // the old revision then (a caller that read the app before the write) builds it afresh.
    const evicted = h.nextEvent((e) => e.type === "evicted" && e.key === `${app.id}:1:0`);
    expect(await h.call(h.code.publish(app.id, `let calls = 0;\n${appModule({ count: "async () => ++calls" }, manifest)}`, manifest, 2), "count")).toBe(1);
    await evicted;
    expect(await h.call(app, "count")).toBe(1);
  });
});
