import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError } from "../src/errors/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const strictInput = { type: "object", properties: { n: { type: "integer", minimum: 0 } }, required: ["n"], additionalProperties: false };

describeEachDialect("operations: validation, roles, results, ceilings, diagnostics", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect, deadlineMs: 1500 });
  });
  afterAll(async () => h.close());

  const app = () =>
    h.code.publish(
      `ops-${dialect}`,
      `export const manifest = {};
       export default {
         async fetch(request, env) {
           const op = request.headers.get("x-svc-op");
           const input = await request.json();
           if (op === "double") return Response.json({ ok: true, value: { n: input.n * 2 } });
           if (op === "refuse") return Response.json({ ok: false, error: { message: "no such order" } });
           if (op === "boom") { const x = null; return x.field; }
           if (op === "garbage") return new Response("<html>", { status: 200 });
           if (op === "badout") return Response.json({ ok: true, value: { n: "not a number" } });
           if (op === "slow") { await new Promise((r) => setTimeout(r, input.ms)); return Response.json({ ok: true, value: true }); }
           if (op === "log") { await env.LOG.emit("warn", "disk almost full", { pct: 91 }); return Response.json({ ok: true, value: true }); }
           return Response.json({ ok: true, value: op });
         },
       };`,
      {
        routes: {
          double: { access: "read", input: strictInput, output: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
          refuse: {},
          boom: {},
          garbage: {},
          badout: { output: { type: "object", properties: { n: { type: "integer" } } } },
          slow: {},
          log: {},
        },
        capabilities: { imports: ["svc:logging/emit@1.0"] },
      },
    );

  it("validates input: unknown op 404, schema errors 400 with details, extra keys unexpected_keys", async () => {
    const a = app();
    expect(await h.call(a, "double", { n: 21 })).toEqual({ n: 42 });
    expect((await refusal(h.call(a, "nope"))).kind).toBe("unknown_operation");
    expect((await refusal(h.call(a, "toString"))).kind).toBe("unknown_operation");
    const invalid = await refusal(h.call(a, "double", { n: -1 }));
    expect([invalid.status, invalid.kind]).toEqual([400, "invalid_input"]);
    expect(invalid.fields.details?.errors).toBeInstanceOf(Array);
    const extra = await refusal(h.call(a, "double", { n: 1, admin: true }));
    expect([extra.status, extra.kind]).toEqual([400, "unexpected_keys"]);
    expect(extra.fields.details?.keys).toEqual(["admin"]);
    expect((await refusal(h.call(a, "double", [1]))).kind).toBe("invalid_input");
  });

  it("lets viewers call read ops only", async () => {
    const a = app();
    expect(await h.call(a, "double", { n: 1 }, { role: "viewer" })).toEqual({ n: 2 });
    const denied = await refusal(h.call(a, "refuse", {}, { role: "viewer" }));
    expect([denied.status, denied.kind]).toEqual([403, "forbidden"]);
  });

  it("maps ok:false to 422, a throw or garbage to 500 with diag and activity, bad output to 502", async () => {
    const a = app();
    const failed = await refusal(h.call(a, "refuse"));
    expect([failed.status, failed.kind, failed.message]).toEqual([422, "operation_failed", "no such order"]);

    const threw = await refusal(h.call(a, "boom"));
    expect([threw.status, threw.kind]).toEqual([500, "operation_failed"]);
    expect(threw.message).toMatch(/TypeError/);
    const entry = h.diag.list(a.id)[0];
    expect(entry?.stack).toMatch(/app\.js:\d+:\d+/);
    expect(entry?.source).toBe("app.js");
    expect(entry?.line).toBeGreaterThan(0);

    const garbage = await refusal(h.call(a, "garbage"));
    expect([garbage.status, garbage.kind]).toEqual([500, "operation_failed"]);

    const badout = await refusal(h.call(a, "badout"));
    expect([badout.status, badout.kind]).toEqual([502, "invalid_output"]);

    const events = await h.activity.list(a.id, { kinds: null, since: null, limit: 10 });
    expect(events.map((e) => e.kind)).toEqual(["contract_validation", "api_proxy_result", "api_proxy_result"]);
    expect(JSON.stringify(events)).not.toMatch(/app\.js:\d+/);
    expect(events[1]?.revision).toBe(1);
  });

  it("feeds env.LOG into the diag ring, most recent first", async () => {
    const a = app();
    await h.call(a, "log");
    expect(h.diag.list(a.id)[0]).toMatchObject({ message: '[warn] disk almost full {"pct":91}', source: "env.LOG" });
  });

  it("answers executor_error may_have_run past the deadline", async () => {
    const a = app();
    const late = await refusal(h.call(a, "slow", { ms: 20_000 }));
    expect([late.status, late.kind]).toEqual([503, "executor_error"]);
    expect(late.fields.details?.execution).toBe("may_have_run");
  });

  it("applies the concurrent-runs ceiling with app_busy", async () => {
    const a = h.code.publish("ops-busy-" + dialect, appModule({ slow: `async (i) => { await new Promise((r) => setTimeout(r, 400)); return true }` }), { routes: { slow: {} } });
    const results = await Promise.allSettled(Array.from({ length: 9 }, () => h.call(a, "slow")));
    const refused = results.filter((r) => r.status === "rejected").map((r) => (r).reason as ApiError);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.fields).toMatchObject({ limit: "concurrent_runs", observed: 9, allowed: 8, rung: "throttled", recovery: { kind: "retry" } });
    expect(refused[0]?.status).toBe(429);
  });

  it("applies the runs-per-window ceiling with app_busy", async () => {
    const a = h.code.publish("ops-window-" + dialect, appModule({ ping: `async () => 1` }), { routes: { ping: {} } });
    // The bucket refills at 10 calls a second while we spend it, so count until the refusal.
    let calls = 0;
    let busy: ApiError | null = null;
    while (busy === null && calls < 800) {
      const batch = await Promise.allSettled(Array.from({ length: 8 }, () => h.call(a, "ping")));
      calls += batch.length;
      // The batch's calls reach the bucket in no set order: the first refused is throttled, any
      // later one inside its wait is further up the ladder (parked, then closed).
      const refusals = batch.flatMap((r) => (r.status === "rejected" ? [r.reason as ApiError] : []));
      if (refusals.length > 0) {
        const rungs = refusals.map((r) => r.fields.rung);
        expect(rungs.filter((rung) => rung === "throttled")).toHaveLength(1);
        expect(rungs.every((rung) => rung === "throttled" || rung === "parked" || rung === "closed")).toBe(true);
        busy = refusals.find((r) => r.fields.rung === "throttled") ?? null;
      }
    }
    expect(calls).toBeGreaterThan(600);
    if (busy === null) throw new Error("never refused");
    expect(busy.fields).toMatchObject({ limit: "runs_per_window", allowed: 600, rung: "throttled" });
    expect(busy.headers["Retry-After"]).toBeDefined();
  });
});
