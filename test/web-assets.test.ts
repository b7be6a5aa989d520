import { afterAll, beforeAll, expect, it } from "vitest";
import { HOUR, type ManualClock } from "../src/config/clock.ts";
import { ASSET_MAX_BYTES } from "../src/domain/app-page/assets.ts";
import type { ApiResponse } from "./helpers/client.ts";
import { expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { openFrame, openShell } from "./helpers/web.ts";

const MODULE = moduleSource(manifestOf("assets-app", ["hello"]));
const MiB = 1024 * 1024;

describeEachDialect("assets", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());

  async function upload(appId: string, key: string | null, file: { data: Uint8Array; type: string } | null, auth: { token?: string; cookie?: string; origin?: string } = {}): Promise<ApiResponse> {
    const form = new FormData();
    if (key !== null) form.set("key", key);
    if (file !== null) form.set("file", new Blob([file.data], { type: file.type }), "upload.bin");
    const headers: Record<string, string> = {};
    if (auth.token !== undefined) headers.authorization = `Bearer ${auth.token}`;
    if (auth.cookie !== undefined) headers.cookie = auth.cookie;
    if (auth.origin !== undefined) headers.origin = auth.origin;
    const res = await fetch(`${server.url}/app/${appId}/assets`, { method: "POST", body: form, headers });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text), text };
  }

  const png = (bytes: number) => ({ data: new Uint8Array(bytes).fill(7), type: "image/png" });

  it("uploads, lists, serves through a 24-hour signed URL with nosniff and a restrictive CSP, deletes", async () => {
    const { id, token } = (await server.client.post("/app", { module: MODULE })).body;
    const res = await upload(id, "img/logo.png", png(1234), { token });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ ok: true, key: "img/logo.png", sizeBytes: 1234 });
    expect(res.body.url).toMatch(new RegExp(`^${server.config.baseUrl}/app/${id}/assets/img/logo\\.png\\?exp=\\d+&sig=`));

    const served = await fetch(res.body.url);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(served.headers.get("x-content-type-options")).toBe("nosniff");
    expect(served.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(served.headers.get("content-security-policy")).toContain("sandbox");
    expect((await served.arrayBuffer()).byteLength).toBe(1234);

    // Change the signature's first character to a different one (never a no-op).
    const tamperedSearch = new URL(res.body.url).search.replace(/sig=(.)/, (_m, c: string) => `sig=${c === "A" ? "B" : "A"}`);
    const tampered = await server.client.get(new URL(res.body.url).pathname + tamperedSearch);
    expectError(tampered, 403, "forbidden");
    expectError(await server.client.get(`/app/${id}/assets/img/logo.png`), 401, "unauthorized");
    expect((await server.client.get(`/app/${id}/assets/img/logo.png`, { token })).status).toBe(200);

    const list = await server.client.get(`/app/${id}/assets`, { token });
    expect(list.body.assets).toEqual([expect.objectContaining({ key: "img/logo.png", contentType: "image/png", sizeBytes: 1234 })]);

    (server.clock as ManualClock).advance(24 * HOUR + 1000);
    expectError(await server.client.get(new URL(res.body.url).pathname + new URL(res.body.url).search), 403, "forbidden");

    expect((await server.client.delete(`/app/${id}/assets/img/logo.png`, { token })).body).toEqual({ ok: true });
    expectError(await server.client.delete(`/app/${id}/assets/img/logo.png`, { token }), 404, "not_found");
    expectError(await server.client.get(`/app/${id}/assets/img/logo.png`, { token }), 404, "not_found");
  });

  it("refuses bad keys, content types and bodies with the spec's kinds", async () => {
    const { id, token } = (await server.client.post("/app", { module: MODULE })).body;
    for (const key of ["../escape", "a/../b", "/root", ".hidden", "sp ace", "x".repeat(201)]) {
      expectError(await upload(id, key, png(10), { token }), 400, "asset_invalid_key");
    }
    for (const type of ["text/html", "application/xhtml+xml", "application/javascript", "text/html; charset=utf-8"]) {
      expectError(await upload(id, "page", { data: new Uint8Array(4), type }, { token }), 400, "asset_invalid_content_type");
    }
    for (const type of ["text/plain", "application/json", "font/woff2", "audio/mpeg", "application/pdf", "application/octet-stream"]) {
      expect((await upload(id, `ok-${type.replace(/\W/g, "-")}`, { data: new Uint8Array(4), type }, { token })).status).toBe(201);
    }
    expectError(await upload(id, null, png(10), { token }), 400, "invalid_request");
    expectError(await upload(id, "no-file", null, { token }), 400, "invalid_request");
    expectError(await server.client.post(`/app/${id}/assets`, { key: "x" }, { token }), 400, "invalid_request");
    // Bodies busboy cannot read: no boundary, a file part cut off, one field past the limit then a file.
    const file = 'Content-Disposition: form-data; name="file"; filename="x"\r\nContent-Type: text/plain\r\n\r\n';
    const malformed: [string, string][] = [
      ["multipart/form-data", "xx"],
      ["multipart/form-data; boundary=abc", `--abc\r\nContent-Disposition: form-data; name="key"\r\n\r\nc.txt\r\n--abc\r\n${file}hello`],
      ["multipart/form-data; boundary=abc", `${["key", "a", "b", "c", "d"].map((name) => `--abc\r\nContent-Disposition: form-data; name="${name}"\r\n\r\nv\r\n`).join("")}--abc\r\n${file}hello\r\n--abc--\r\n`],
    ];
    for (const [type, raw] of malformed) {
      expectError(await server.client.post(`/app/${id}/assets`, undefined, { token, raw, headers: { "content-type": type } }), 400, "invalid_request");
    }
    const big = expectError(await upload(id, "big.png", png(ASSET_MAX_BYTES + 1), { token }), 413, "asset_too_large");
    expect(big.recovery).toMatchObject({ kind: "shrink", field: "asset", cap_bytes: ASSET_MAX_BYTES });
  });

  it("caps an app at 50 assets and 100 MiB; replacing a key frees its old size", async () => {
    const { id, token } = (await server.client.post("/app", { module: MODULE })).body;
    for (let i = 0; i < 10; i++) expect((await upload(id, `big-${i}`, png(10 * MiB), { token })).status).toBe(201);
    expectError(await upload(id, "one-more", png(1), { token }), 413, "asset_quota_exceeded");
    // A replacement of the same size fits exactly.
    expect((await upload(id, "big-0", png(10 * MiB), { token })).status).toBe(201);
    for (let i = 0; i < 10; i++) expect((await server.client.delete(`/app/${id}/assets/big-${i}`, { token })).status).toBe(200);

    const other = (await server.client.post("/app", { module: MODULE })).body;
    for (let i = 0; i < 50; i++) expect((await upload(other.id, `a${i}`, png(8), { token: other.token })).status).toBe(201);
    expectError(await upload(other.id, "a50", png(8), { token: other.token }), 413, "asset_count_exceeded");
    expect((await upload(other.id, "a0", png(9), { token: other.token })).status).toBe(201);
  });

  it("throttles writes per app with too_many_requests", async () => {
    const { id, token } = (await server.client.post("/app", { module: MODULE })).body;
    let last: ApiResponse | null = null;
    for (let i = 0; i < 61; i++) {
      last = await server.client.delete(`/app/${id}/assets/none-${i}`, { token });
      if (last.status === 429) break;
      expect(last.status).toBe(404);
    }
    if (last === null) throw new Error("no request was made");
    expectError(last, 429, "too_many_requests");
    expect(last.headers.get("ratelimit-limit")).toBe("60");
    expect(last.headers.get("retry-after")).toBe(last.headers.get("ratelimit-reset"));
  });

  it("accepts the app token, the owner, a render token and the claim cookie (with our Origin); refuses others", async () => {
    const created = (await server.client.post("/app", { module: MODULE })).body;
    const other = (await server.client.post("/app", { module: MODULE })).body;
    const render = await openFrame(server, created.id, await openShell(server, `/app/${created.id}`));
    expect((await upload(created.id, "by-render", png(3), { token: render })).status).toBe(201);
    expectError(await upload(created.id, "x", png(3)), 401, "unauthorized");
    expectError(await upload(created.id, "x", png(3), { token: other.token }), 403, "forbidden");

    const claimCookie = `svc_claim_${created.id}=${created.token}`;
    expectError(await upload(created.id, "x", png(3), { cookie: claimCookie }), 403, "forbidden");
    expect((await upload(created.id, "by-cookie", png(3), { cookie: claimCookie, origin: server.config.baseUrl })).status).toBe(201);
    expectError(await upload(created.id, "x", png(3), { cookie: `svc_claim_${created.id}=${other.token}`, origin: server.config.baseUrl }), 403, "forbidden");

    const owner = await makeUser(server);
    expect((await server.client.post(`/app/${created.id}/claim`, { token: created.token }, { token: owner.token })).status).toBe(200);
    expect((await upload(created.id, "by-owner", png(3), { token: owner.token })).status).toBe(201);
    const stranger = await makeUser(server);
    expectError(await upload(created.id, "x", png(3), { token: stranger.token }), 403, "forbidden");
    // Once claimed, a visitor's page (a public app) may read assets but not change them.
    expect((await server.client.put(`/app/${created.id}/visibility`, { visibility: "public" }, { token: owner.token })).status).toBe(200);
    const visitor = await openFrame(server, created.id, await openShell(server, `/@${owner.handle}/assets-app`));
    expectError(await upload(created.id, "x", png(3), { token: visitor }), 403, "forbidden");
    expectError(await server.client.delete(`/app/${created.id}/assets/by-owner`, { token: visitor }), 403, "forbidden");
    expect((await server.client.get(`/app/${created.id}/assets/by-owner?t=${visitor}`)).status).toBe(200);
    const keys = (await server.client.get(`/app/${created.id}/assets`, { token: owner.token })).body.assets.map((a: { key: string }) => a.key);
    expect(keys).toEqual(["by-cookie", "by-owner", "by-render"]);
  });
});
