import { afterAll, beforeAll, expect, it } from "vitest";
import { CONTENT_TYPE_CAP, VALUE_CAP_BYTES } from "../../src/runtime/storage/index.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { appModule, startHarness, type Harness } from "../helpers/executor.ts";

const BLOB = "svc:storage/blob@1.0";
const module = appModule({
  put: `async (i, env) => { try { await env.BLOB.put("b" + i.n, new Uint8Array(1), { contentType: i.type }); return "stored" } catch (e) { return e.kind } }`,
  get: `async (i, env) => { const b = await env.BLOB.get("b" + i.n); return b === null ? null : b.contentType }`,
});
const manifest = { routes: { put: {}, get: { access: "read" as const } }, capabilities: { imports: [BLOB] } };

/**
 * A blob's content type rode in the binding frame's header, outside the value's cap and the app's
 * 100 MiB, and was stored as sent: three puts of empty bytes with a 14 MiB type kept 42 MiB that
 * the store counted as nothing. It is now a short printable MIME type, or refused.
 */
describeEachDialect("hostile: a blob's content type", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect });
  });
  afterAll(async () => h.close());

  it("is refused past 255 printable ASCII characters, and nothing is stored; a real MIME type is kept", async () => {
    const app = h.code.publish("blob-type", module, manifest);
    const refused = ["x".repeat(VALUE_CAP_BYTES + 4 * 1024 * 1024), "x".repeat(CONTENT_TYPE_CAP + 1), "text/plain\r\nx-injected: 1", " leading-space", "ünïcode/type"];
    for (const [n, type] of refused.entries()) expect(await h.call(app, "put", { n, type }), type.slice(0, 40)).toBe("invalid_request");
    expect(await h.store.db.selectFrom("app_blobs").select("key").where("app_id", "=", app.id).execute()).toEqual([]);
    expect((await h.usageOf(app.id)).storedBytes).toBe(0);
    expect(await h.call(app, "put", { n: 9, type: "image/svg+xml; charset=utf-8" })).toBe("stored");
    expect(await h.call(app, "get", { n: 9 })).toBe("image/svg+xml; charset=utf-8");
  });
});
