import { afterAll, beforeAll, expect, it } from "vitest";
import { SECOND, type ManualClock } from "../src/config/clock.ts";
import { expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const MODULE = moduleSource(manifestOf("reports-app", ["hello"]));

describeEachDialect("diag, load-error and feedback reports", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  async function unclaimed(): Promise<{ id: string; token: string; render: string }> {
    const created = await server.client.post("/app", { module: MODULE });
    const { id, token } = created.body;
    return { id, token, render: await openFrame(server, id, await openShell(server, `/app/${id}`)) };
  }

  it("caps bodies: diag 16 KiB, load-error 2 KiB, feedback wire 96 KiB, text 16 KiB, structuredData 64 KiB", async () => {
    const { id, render } = await unclaimed();
    const diagTooBig = await server.client.post(`/app/${id}/diag/report`, { message: "x".repeat(16 * 1024) }, { token: render });
    expect(expectError(diagTooBig, 413, "payload_too_large").recovery).toMatchObject({ kind: "shrink", cap_bytes: 16 * 1024 });
    // The limit was counted before the body was refused, and says so.
    expect(diagTooBig.headers.get("ratelimit-limit")).toBe("30");
    expectError(await server.client.post(`/app/${id}/load-error/report`, { message: "x".repeat(2048) }, { token: render }), 413, "payload_too_large");
    expectError(await server.client.post(`/app/${id}/feedback`, { text: "x".repeat(97 * 1024) }, { token: render }), 413, "payload_too_large");
    const text = expectError(await server.client.post(`/app/${id}/feedback`, { text: "é".repeat(8 * 1024 + 1) }, { token: render }), 413, "text_too_large");
    expect(text.recovery).toMatchObject({ kind: "shrink", field: "text", cap_bytes: 16 * 1024 });
    const data = await server.client.post(`/app/${id}/feedback`, { text: "hi", structuredData: { blob: "x".repeat(64 * 1024) } }, { token: render });
    expect(expectError(data, 413, "structured_data_too_large").recovery).toMatchObject({ field: "structured_data" });
    // Just under the caps passes.
    expect((await server.client.post(`/app/${id}/diag/report`, { message: "x".repeat(15 * 1024) }, { token: render })).status).toBe(200);
    expect((await server.client.post(`/app/${id}/feedback`, { text: "x".repeat(16 * 1024), structuredData: { n: 1 } }, { token: render })).status).toBe(201);
  });

  it("rejects malformed reports and foreign credentials", async () => {
    const { id, render } = await unclaimed();
    const other = await unclaimed();
    expectError(await server.client.post(`/app/${id}/diag/report`, { message: "x" }), 401, "unauthorized");
    expectError(await server.client.post(`/app/${id}/diag/report`, { message: "x" }, { token: other.render }), 403, "forbidden");
    expectError(await server.client.post(`/app/${id}/diag/report`, { nope: 1 }, { token: render }), 400, "invalid_request");
    expectError(await server.client.post(`/app/${id}/feedback`, { text: "" }, { token: render }), 400, "invalid_request");
    expectError(await server.client.post(`/app/${id}/feedback`, { text: "hi", extra: 1 }, { token: render }), 400, "invalid_request");
    expectError(await server.client.post(`/app/${id}/load-error/report`, { url: "x" }, { token: render }), 400, "invalid_request");
    expectError(await server.client.post(`/app/00000000-0000-4000-8000-000000000000/diag/report`, { message: "x" }, { token: render }), 404, "app_not_found");
  });

  it("limits each report route to 30 a minute per app and IP, with the spec's headers", async () => {
    const { id, render } = await unclaimed();
    for (let i = 1; i <= 30; i++) {
      const res = await server.client.post(`/app/${id}/load-error/report`, { message: `missing ${i}` }, { token: render });
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBe("30");
      expect(res.headers.get("x-ratelimit-limit")).toBe("30");
      expect(res.headers.get("ratelimit-remaining")).toBe(String(30 - i));
      expect(res.headers.get("ratelimit-reset")).toBe(i < 30 ? "0" : "2");
    }
    const refused = await server.client.post(`/app/${id}/load-error/report`, { message: "one more" }, { token: render });
    expect(expectError(refused, 429, "rate_limited").recovery).toMatchObject({ kind: "retry", retry_after_sec: 2 });
    expect(refused.headers.get("retry-after")).toBe("2");
    // Buckets are per route: diag reports still pass.
    expect((await server.client.post(`/app/${id}/diag/report`, { message: "still fine" }, { token: render })).status).toBe(200);
  });

  it("accepts CSP reports in both browser formats and records diag_report activity", async () => {
    const { id, token, render } = await unclaimed();
    const legacy = await server.client.post(
      `/app/${id}/diag/report?t=${render}`,
      undefined,
      {
        raw: JSON.stringify({ "csp-report": { "document-uri": "http://x/app/frame?t=secret", "effective-directive": "script-src-elem", "blocked-uri": "inline", "line-number": 3 } }),
        headers: { "content-type": "application/csp-report" },
      },
    );
    expect(legacy.status, legacy.text).toBe(200);
    (server.clock as ManualClock).advance(SECOND);
    const modern = await server.client.post(`/app/${id}/diag/report?t=${render}`, undefined, {
      raw: JSON.stringify([{ type: "csp-violation", body: { documentURL: "http://x/frame", effectiveDirective: "img-src", blockedURL: `https://evil.example/x.png?t=${render}&size=2` } }]),
      headers: { "content-type": "application/reports+json" },
    });
    expect(modern.status, modern.text).toBe(200);
    const diag = await server.client.get(`/app/${id}/diag`, { token });
    expect(diag.body.value.entries.map((e: { message: string }) => e.message)).toEqual([
      // A render token in the blocked address is cut, as request logs cut it.
      "CSP blocked https://evil.example/x.png?t=[redacted]&size=2 (img-src)",
      "CSP blocked inline (script-src-elem)",
    ]);
    expect(diag.body.value.entries[1].source).toBe("http://x/app/frame");
    const activity = await server.client.get(`/app/${id}/activity`, { token });
    expect(activity.body.value.items).toHaveLength(2);
    expect(activity.body.value.items[0]).toMatchObject({ kind: "diag_report", revision: 1, data: { type: "csp", directive: "img-src" } });
  });

  // JSON's 1e400 parses to Infinity: refused where it is a field of ours, read as no position in
  // the browsers' formats; either way the diag read that follows still answers.
  it("takes no line or column past what a source could have, and the diag read still answers", async () => {
    const { id, token, render } = await unclaimed();
    for (const raw of ['{"message":"m","line":1e400}', '{"message":"m","col":1e400}', '{"message":"m","line":-1}']) {
      expectError(await server.client.post(`/app/${id}/diag/report`, undefined, { token: render, raw, headers: { "content-type": "application/json" } }), 400, "invalid_request");
    }
    const csp: [string, string][] = [
      ['{"csp-report":{"effective-directive":"img-src","line-number":1e400,"column-number":"1e999"}}', "application/csp-report"],
      ['[{"type":"csp-violation","body":{"effectiveDirective":"font-src","lineNumber":1e999,"columnNumber":-4}}]', "application/reports+json"],
    ];
    for (const [raw, type] of csp) expect((await server.client.post(`/app/${id}/diag/report?t=${render}`, undefined, { raw, headers: { "content-type": type } })).status).toBe(200);
    const diag = await server.client.get(`/app/${id}/diag`, { token });
    expect(diag.status, diag.text).toBe(200);
    expect(diag.body.value.entries.map((e: { line: number; col: number }) => [e.line, e.col])).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  it("GET /app/{id}/activity: app token or owner user token only; validates kinds, since and limit", async () => {
    const { id, token, render } = await unclaimed();
    await server.client.post(`/app/${id}/diag/report`, { message: "boom" }, { token: render });
    expect((await server.client.get(`/app/${id}/activity`, { token })).body.value.items[0]).toMatchObject({ kind: "diag_report", summary: "boom" });
    expectError(await server.client.get(`/app/${id}/activity`), 401, "unauthorized");
    expectError(await server.client.get(`/app/${id}/activity`, { token: render }), 403, "forbidden");
    const stranger = await makeUser(server);
    expectError(await server.client.get(`/app/${id}/activity`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${id}/activity?kinds=diag_report,nope`, { token }), 400, "invalid_request");
    expectError(await server.client.get(`/app/${id}/activity?since=yesterday`, { token }), 400, "invalid_request");
    for (const limit of ["0", "501", "abc", "1.5"]) expectError(await server.client.get(`/app/${id}/activity?limit=${limit}`, { token }), 400, "invalid_request");
    expectError(await server.client.get(`/app/not-a-uuid/activity`, { token }), 400, "invalid_id");
    expect((await server.client.get(`/app/${id}/activity?kinds=api_proxy_result`, { token })).body.value.items).toEqual([]);
    expect((await server.client.get(`/app/${id}/activity?since=2999-01-01T00:00:00Z&limit=500`, { token })).body.value.items).toEqual([]);

    // Claimed: the owner's user token reads it; the revoked app token no longer does.
    const owner = await makeUser(server);
    expect((await server.client.post(`/app/${id}/claim`, { token }, { token: owner.token })).status).toBe(200);
    expect((await server.client.get(`/app/${id}/activity?limit=1`, { token: owner.token })).body.value.items).toHaveLength(1);
    expectError(await server.client.get(`/app/${id}/activity`, { token: stranger.token }), 403, "forbidden");
  });

  it("GET /app/{id}/diag: app, user or render token of the owner only", async () => {
    const owner = await makeUser(server);
    const created = await server.client.post("/app", { module: MODULE }, { token: owner.token });
    const { id } = created.body;
    const ownerRender = await openFrame(server, id, await openShell(server, `/@${owner.handle}/reports-app`, owner.cookie));
    await server.client.post(`/app/${id}/diag/report`, { message: "from the owner's page", line: 3, col: 7 }, { token: ownerRender });
    const read = await server.client.get(`/app/${id}/diag`, { token: ownerRender });
    expect(read.status).toBe(200);
    expect(read.body.value.entries[0]).toMatchObject({ message: "from the owner's page", line: 3, col: 7 });
    expect((await server.client.get(`/app/${id}/diag`, { token: owner.token })).status).toBe(200);

    // A visitor's render token (public app, anonymous) may report but not read.
    expect((await server.client.put(`/app/${id}/visibility`, { visibility: "public" }, { token: owner.token })).status).toBe(200);
    const visitorRender = await openFrame(server, id, await openShell(server, `/@${owner.handle}/reports-app`));
    expect((await server.client.post(`/app/${id}/diag/report`, { message: "visitor" }, { token: visitorRender })).status).toBe(200);
    expectError(await server.client.get(`/app/${id}/diag`, { token: visitorRender }), 403, "forbidden");
    const stranger = await makeUser(server);
    expectError(await server.client.get(`/app/${id}/diag`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${id}/diag`), 401, "unauthorized");
    expectError(await server.client.get(`/app/nope/diag`, { token: owner.token }), 400, "invalid_id");
  });

  it("feedback: sent from the page, listed for the owner only", async () => {
    const owner = await makeUser(server);
    const created = await server.client.post("/app", { module: MODULE }, { token: owner.token });
    const { id } = created.body;
    const render = await openFrame(server, id, await openShell(server, `/@${owner.handle}/reports-app`, owner.cookie));
    const sent = await server.client.post(`/app/${id}/feedback`, { text: "Love it", structuredData: { stars: 5 }, email: "fan@example.test" }, { token: render });
    expect(sent.status).toBe(201);
    const list = await server.client.get(`/app/${id}/feedback`, { token: owner.token });
    expect(list.body.feedback).toEqual([expect.objectContaining({ id: sent.body.id, text: "Love it", structuredData: { stars: 5 }, email: "fan@example.test", revision: 1 })]);
    const stranger = await makeUser(server);
    expectError(await server.client.get(`/app/${id}/feedback`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${id}/feedback`), 401, "unauthorized");
    expectError(await server.client.get(`/app/${id}/feedback`, { token: render }), 403, "forbidden");
  });
});
