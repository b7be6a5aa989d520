import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../src/errors/index.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

interface Sample {
  at: number;
  ok: boolean;
}

/**
 * Runaway apps against one workerd process shared with a well-behaved app. The process is
 * executor-level (no store difference), so this suite runs on SQLite only.
 */
describe("executor: hostile apps", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      dialect: "sqlite",
      processes: 1,
      tuning: { pingIntervalMs: 250, pingTimeoutMs: 1500, quarantineMs: 60_000, maxOldSpaceMb: 128 },
    });
  });
  afterAll(async () => h.close());

  it("kills and restarts a process on an infinite loop and a heap bomb, quarantines the culprits, and keeps a good app answering", async () => {
    // Enterprise ceilings: the load below runs far past the free plan's 600 calls a minute.
    const good = { ...h.code.publish("good", appModule({ ping: `async () => "pong"` }), { routes: { ping: { access: "read" } } }), plan: "enterprise" as const };
    const spinner = h.code.publish("spinner", appModule({ spin: `async () => { for (;;) {} }` }), { routes: { spin: {} } });
    const bomber = h.code.publish("bomber", appModule({ bomb: `async () => { const a = []; for (;;) a.push(new Array(100000).fill(Math.random())) }` }), { routes: { bomb: {} } });
    expect(await h.call(good, "ping")).toBe("pong");

    const samples: Sample[] = [];
    let running = true;
    const load = async () => {
      while (running) {
        const ok = await h.call(good, "ping").then(
          (v) => v === "pong",
          () => false,
        );
        samples.push({ at: Date.now(), ok });
        // Yield to timers: a refusal settles in microtasks and would otherwise starve the loop.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const loaders = [load(), load()];

    const attackStart = Date.now();
    // A culprit faults at most twice: once in the shared process (then it and the good app are on
    // trial, each in a probation process), once in its own; then it is quarantined and fails fast.
    for (const [app, op, reason] of [
      // The CPU budget (1 s) or the unanswered ping, whichever notices first.
      [spinner, "spin", ["hung", "cpu"]],
      // V8 may thrash in GC near the heap cap long enough for the watchdog to call it hung first.
      [bomber, "bomb", ["crashed", "hung", "cpu", "memory"]],
    ] as const) {
      const first = (await h.call(app, op).catch((e: unknown) => e)) as ApiError;
      expect(first).toBeInstanceOf(ApiError);
      expect(first.kind).toBe("executor_error");
      expect(first.fields.details?.execution).toBe("may_have_run");
      expect(reason).toContain(first.fields.details?.reason);
      let attempts = 1;
      let last = first;
      while (attempts < 3 && (last.fields.details as { reason?: string }).reason !== "quarantined") {
        const started = Date.now();
        last = (await h.call(app, op).catch((e: unknown) => e)) as ApiError;
        attempts += 1;
        if ((last.fields.details as { reason?: string }).reason === "quarantined") expect(Date.now() - started).toBeLessThan(50);
      }
      expect(last.kind).toBe("executor_error");
      expect(last.fields.details).toMatchObject({ execution: "not_started", reason: "quarantined" });
    }
    const attackEnd = Date.now();
    await new Promise((r) => setTimeout(r, 2000));
    running = false;
    await Promise.all(loaders);

    const during = samples.filter((s) => s.at >= attackStart && s.at <= attackEnd);
    const after = samples.filter((s) => s.at > attackEnd);
    const rate = (list: Sample[]) => list.filter((s) => s.ok).length / Math.max(1, list.length);
    console.warn(
      `good app during attack: ${during.filter((s) => s.ok).length}/${during.length} ok (${(rate(during) * 100).toFixed(1)}%); after restart: ${after.filter((s) => s.ok).length}/${after.length} ok`,
    );
    // With one shared process, a fault can only cost the good app its calls in flight at that
    // moment (two loaders: at most two per fault); every other call is served, if late.
    const faults = h.events.filter((e) => e.type === "fault").length;
    expect(during.length).toBeGreaterThan(0);
    expect(during.filter((s) => !s.ok).length).toBeLessThanOrEqual(2 * faults);
    expect(after.length).toBeGreaterThan(50);
    expect(rate(after)).toBe(1);
    const quarantined = h.events.flatMap((e) => (e.type === "fault" && e.quarantined !== null ? [e.quarantined] : []));
    expect(quarantined).toEqual(["spinner", "bomber"]);
    expect(faults).toBeLessThanOrEqual(4);
  }, 60_000);

  it("keeps a good app on another process fully answering while a neighbour process is killed (EXECUTORS=2)", async () => {
    const h2 = await startHarness({ dialect: "sqlite", processes: 2, tuning: { pingIntervalMs: 250, pingTimeoutMs: 1500 } });
    try {
      // Pick a good app that hashes to a different process than the spinner.
      const spinner = h2.code.publish("spinner-2", appModule({ spin: `async () => { for (;;) {} }` }), { routes: { spin: {} } });
      const evilPid = h2.executor.pool.processOf(spinner.id)?.pid;
      let goodId = "good-0";
      for (let i = 0; h2.executor.pool.processOf(goodId)?.pid === evilPid; i++) goodId = `good-${i}`;
      const good = { ...h2.code.publish(goodId, appModule({ ping: `async () => "pong"` }), { routes: { ping: {} } }), plan: "enterprise" as const };
      let ok = 0;
      let failed = 0;
      let running = true;
      const loader = (async () => {
        while (running) {
          await h2.call(good, "ping").then(
            () => (ok += 1),
            () => (failed += 1),
          );
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      const spin = (await h2.call(spinner, "spin").catch((e: unknown) => e)) as ApiError;
      expect(spin.kind).toBe("executor_error");
      running = false;
      await loader;
      console.warn(`good app on the other process during the attack: ${ok}/${ok + failed} ok`);
      expect(failed).toBe(0);
      expect(ok).toBeGreaterThan(50);
    } finally {
      await h2.close();
    }
  }, 60_000);

  it("blames an app that fills memory even when its process was already being recycled for its RSS", async () => {
    const MiB = 1024 * 1024;
    const h3 = await startHarness({
      dialect: "sqlite",
      processes: 1,
      tuning: { pingIntervalMs: 100, rssHighWaterBytes: 96 * MiB, memoryMaxBytes: 320 * MiB, quarantineMs: 60_000 },
    });
    try {
      // 16 MiB every 50 ms: past the recycle mark well before the ceiling, slowly enough for the
      // fresh process to come up and the old one to be marked as draining first.
      const filler = h3.code.publish(
        "filler",
        appModule({ fill: `async () => { const a = new Uint8Array(2 ** 30); for (let i = 0; i < a.length; i += 4096) { a[i] = 1; if (i % (16 * 2 ** 20) === 0) await scheduler.wait(50); } return a.length; }` }),
        { routes: { fill: {} } },
      );
      const answers: string[] = [];
      for (let attempt = 0; attempt < 4 && answers.at(-1) !== "quarantined"; attempt++) {
        const failure = (await h3.call(filler, "fill").catch((e: unknown) => e)) as ApiError;
        answers.push(String((failure.fields?.details as { reason?: string } | undefined)?.reason ?? "answered"));
      }
      expect(h3.events.some((e) => e.type === "recycle")).toBe(true);
      expect(answers.at(-1), answers.join(" → ")).toBe("quarantined");
      expect(h3.events.flatMap((e) => (e.type === "fault" && e.quarantined !== null ? [e.quarantined] : []))).toEqual(["filler"]);
    } finally {
      await h3.close();
    }
  }, 60_000);
});
