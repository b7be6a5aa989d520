import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../helpers/executor.ts";

// workerd runs with V8's --expose-gc so the shim can collect a busy isolate's garbage
// (workers/gc.worker.js). The function is the shim's alone: app code, from its module's first
// line on, must find nothing to call, whatever it tries.
const PROBE = `const seenAtTop = { type: typeof globalThis.gc, value: String(globalThis.gc), named: (() => { try { return typeof gc; } catch { return "unreachable"; } })() };
export const manifest = { routes: { probe: {} } };
export default {
  async fetch(request) {
    const op = request.headers.get("x-svc-op");
    if (op === "probe") {
      const own = Object.getOwnPropertyDescriptor(globalThis, "gc");
      return Response.json({ ok: true, value: { top: seenAtTop, atCall: typeof globalThis.gc, own: own === undefined ? null : typeof own.value } });
    }
    return Response.json({ ok: false }, { status: 404 });
  },
};`;

describe("hostile: V8's gc() is not reachable from app code", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1 });
  });
  afterAll(async () => h.close());

  it("is undefined at the module's top level and during a call", async () => {
    const app = h.code.publish("gc-probe", PROBE, { routes: { probe: {} } });
    expect(await h.call(app, "probe")).toEqual({
      top: { type: "undefined", value: "undefined", named: "undefined" },
      atCall: "undefined",
      own: "undefined",
    });
  });
});
