import { afterAll, beforeAll, expect, it } from "vitest";
import { LOG_LINE_MAX_BYTES } from "../../src/runtime/executor/internal-api/bindings.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { appModule, startHarness, type Harness } from "../helpers/executor.ts";

const module = appModule({
  refused: `async (i) => { let n = 0; for (; n < i.n; n++) await fetch("http://refused.invalid/" + n).catch(() => undefined); return n }`,
  log: `async (i, env) => { try { await env.LOG.emit("info", "x".repeat(i.bytes)); return "kept" } catch (e) { return e.kind } }`,
  ping: `async () => "pong"`,
});
const manifest = { routes: { refused: {}, log: {}, ping: {} }, capabilities: { imports: ["svc:logging/emit@1.0"] } };

/**
 * What an app's code makes Node do that it does not keep. Each refused fetch() was reported to
 * Node, which read the app's secrets to redact the origin and added a diagnostics line: a loop
 * of them (from background work too, after the call answered) kept ~850 secret reads a second
 * going. Each env.LOG.emit line was parsed, redacted and serialized whole, up to 10 MiB, to keep
 * 2,000 characters of it.
 */
describeEachDialect("hostile: work an app makes Node do for nothing", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect });
  });
  afterAll(async () => h.close());

  it("refused fetches are reported 20 in 10 seconds at most: the rest are dropped, the refusals stand", async () => {
    const app = h.code.publish("refusals", module, manifest);
    expect(await h.call(app, "ping")).toBe("pong");
    const reads = h.secretReads.length;
    expect(await h.call(app, "refused", { n: 200 })).toBe(200);
    const reported = h.diag.list(app.id).filter((entry) => entry.message.includes("outbound fetch to http://refused.invalid refused"));
    expect(reported.length).toBe(20);
    expect(h.secretReads.length - reads).toBeLessThanOrEqual(20);
  });

  it(`a log line over ${LOG_LINE_MAX_BYTES} bytes is refused before Node parses it`, async () => {
    const app = h.code.publish("big-lines", module, manifest);
    expect(await h.call(app, "log", { bytes: LOG_LINE_MAX_BYTES - 1024 })).toBe("kept");
    expect(await h.call(app, "log", { bytes: 8 * 1024 * 1024 })).toBe("invalid_request");
  });
});
