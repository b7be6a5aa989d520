import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError } from "../../src/errors/index.ts";
import { keyCost } from "../../src/runtime/storage/limits.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { appModule, exactKeyBytes, keptKeyBytes, startHarness, type Harness } from "../helpers/executor.ts";

// Keys of 500 bytes and more, each with a one-byte value: the values' cap would let such an app
// write rows until the disk is full. The keys' own cap (lowered here to 200 keys' worth, to be
// reached in a test) stops it, whichever way the writes travel.
const KEY = "k".repeat(500);
const COST_EACH = keyCost(`${KEY}999`);
const CAP = 200 * COST_EACH;

const module = appModule({
  // One key after another, as fast as write-behind takes them: set() resolves at once until a
  // batch of them reaches Node.
  flood: `async (i, env) => { let n = 0; try { for (; n < 100000; n++) await env.KV.set("${KEY}" + n, 1); return { n } } catch (e) { return { n, kind: e.kind } } }`,
  // Several keys in one commit, past the cap, from a second op.
  many: `async (i, env) => { try { await Promise.all(Array.from({ length: 50 }, (_, j) => env.KV.set("${KEY}b" + j, 1))); return "stored" } catch (e) { return e.kind } }`,
  blob: `async (i, env) => { try { await env.BLOB.put("${KEY}blob", new Uint8Array(0)); return "stored" } catch (e) { return e.kind } }`,
});
const manifest = { routes: { flood: {}, many: {}, blob: {} }, capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] } };

describeEachDialect("hostile: an app writing new keys without end", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect, keysCap: CAP });
  });
  afterAll(async () => h?.close());

  it("is stopped at its keys' cap with storage_full; the count is exact and nothing past it is stored", async () => {
    const app = h.code.publish("key-flood", module, manifest);
    const flooded = await h.call(app, "flood").then(
      (value) => value as { n: number; kind?: string },
      (error: unknown) => ({ n: -1, kind: error instanceof ApiError ? error.kind : String(error) }),
    );
    expect(flooded.kind).toBe("storage_full");
    const kept = await keptKeyBytes(h.store, app.id);
    expect(kept).toBe(await exactKeyBytes(h.store, app.id));
    // Where the cap fell depends on how the writes travelled: one by one (SQLite, an app's first
    // call, no lease yet), they stop at the last key that fits; in a write-behind batch (256
    // keys), a batch past the cap is refused whole.
    expect(kept).toBeLessThanOrEqual(CAP);
    // The values took next to nothing of the 100 MiB the values' cap allows.
    expect((await h.usageOf(app.id)).storedBytes).toBeLessThan(1000);
    // Filled to the last key that fits, the app's other ways to add keys are refused as well.
    let refused = false;
    for (let i = 0; i <= 200 && !refused; i++) {
      refused = await h.storage.kvCommit(app.id, [{ key: `${KEY}f${i}`, value: "1" }]).then(
        () => false,
        (error: unknown) => error instanceof ApiError && error.kind === "storage_full",
      );
    }
    expect(refused).toBe(true);
    const full = await keptKeyBytes(h.store, app.id);
    expect(full).toBeGreaterThan(CAP - COST_EACH);
    for (const op of ["many", "blob"]) {
      const answer = await h.call(app, op).catch((error: unknown) => (error instanceof ApiError ? error.kind : String(error)));
      expect(answer, op).toBe("storage_full");
    }
    expect(await keptKeyBytes(h.store, app.id)).toBe(full);
    expect(full).toBe(await exactKeyBytes(h.store, app.id));
  });
});
