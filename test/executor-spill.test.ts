import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

// Each isolate draws its own id when its module loads, so distinct ids are distinct processes.
const whoAmI = appModule({
  who: `async (input) => { await new Promise((r) => setTimeout(r, input.ms ?? 0)); return globalThis.isolateId ??= crypto.randomUUID(); }`,
  spin: `async () => { for (;;) {} }`,
});
const manifest = { routes: { who: {}, spin: {} } };
// Enterprise run ceilings, so 64 calls at once are the executor's problem, not the plan's.
const publish = (h: Harness, id: string) => ({ ...h.code.publish(id, whoAmI, manifest), plan: "enterprise" as const });

/** Where a hot app runs when EXECUTORS=2; executor-level (no store difference), so SQLite only. */
describe("executor: a hot app spills onto a second process", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 2, tuning: { pingIntervalMs: 200, pingTimeoutMs: 3_000 } });
  });
  afterAll(async () => h.close());

  it("keeps one caller at a time on its own process", async () => {
    const app = publish(h, "spill-calm");
    const ids = new Set<unknown>();
    for (let i = 0; i < 20; i++) ids.add(await h.call(app, "who", { ms: 1 }));
    expect(ids.size).toBe(1);
  });

  it("serves many concurrent calls from both processes", async () => {
    const app = publish(h, "spill-hot");
    const ids = await Promise.all(Array.from({ length: 64 }, () => h.call(app, "who", { ms: 20 })));
    expect(new Set(ids).size).toBe(2);
  });

  it("keeps a call on its app's process while warm-ups build the isolate there", async () => {
    // A top level that takes a while, so that the warm-ups are still building when the call comes.
    const app = { ...h.code.publish("spill-warming", `for (let i = 0; i < 3e7; i++);\n${whoAmI}`, manifest), plan: "enterprise" as const };
    const isolate = { appId: app.id, revision: app.revision, secretsVersion: 0, caps: [] };
    // Two builds in flight (a write's staged one and its warm-up, say) are not two calls: spilled,
    // the call would build the isolate all over again on the other process.
    const warming = [h.executor.warm(isolate), h.executor.warm(isolate)];
    const first = await h.call(app, "who", { ms: 0 });
    await Promise.all(warming);
    expect(await h.call(app, "who", { ms: 0 })).toBe(first);
  });

  it("never spills onto a process whose calls stopped finishing", async () => {
    // Two apps with different home processes: one blocks its process, the other is hot.
    const candidates = Array.from({ length: 20 }, (_, i) => publish(h, `spill-app-${i}`));
    const runaway = candidates[0];
    const hot = candidates.find((a) => h.executor.pool.processOf(a.id) !== h.executor.pool.processOf(runaway?.id ?? ""));
    if (runaway === undefined || hot === undefined) throw new Error("no two apps on different processes");
    await h.call(hot, "who", { ms: 0 });
    const spinning = h.call(runaway, "spin").catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 150));
    // Well inside the 3 s before the watchdog kills the blocked process: every call must land
    // on the hot app's own process and answer; one spilled onto the blocked one would hang.
    const ids = await Promise.all(Array.from({ length: 32 }, () => h.call(hot, "who", { ms: 5 })));
    expect(new Set(ids).size).toBe(1);
    expect(await spinning).toMatchObject({ kind: "executor_error" });
  });
});
