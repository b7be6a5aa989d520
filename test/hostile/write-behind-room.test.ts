import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { systemClock } from "../../src/config/clock.ts";
import { APP_CAP_BYTES, AppStorage, VALUE_CAP_BYTES } from "../../src/runtime/storage/index.ts";
import { ApiError } from "../../src/errors/index.ts";
import { appModule, exactUsage, startHarness, type Harness } from "../helpers/executor.ts";

const reachable = inject("pgAdminUrl") !== null;

const module = appModule({
  fill: `async (i, env) => { try { await env.KV.set("x", "a".repeat(i.n)); return "stored" } catch (e) { return e.kind } }`,
});
const manifest = { routes: { fill: {} }, capabilities: { imports: ["svc:storage/kv@1.0"] } };

// PostgreSQL write-behind holds room in an app's cap from the usage the call read as it began
// (UsageLedger, AppStorage.seenUsage). Another instance may fill that room before the op's writes commit: the cap must
// still hold, to the byte, and the op must fail with the refusal (storage_full) rather than report writes that did not happen.
(reachable ? describe : describe.skip)(`hostile: write-behind room taken by another instance${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let h: Harness;
  let other: AppStorage;
  beforeAll(async () => {
    h = await startHarness({ dialect: "postgres" });
    // A second instance's storage on the same database: its own ledger, its own data versions.
    other = new AppStorage(h.store, systemClock);
  });
  afterAll(async () => h.close());

  it("fails the op whose lease was granted on usage another instance then filled; the cap holds to the byte", async () => {
    const app = h.code.publish("room-race", module, manifest);
    expect(await h.call(app, "fill", { n: 10 })).toBe("stored");
    const before = await h.usageOf(app.id);

    // The other instance leaves 100 bytes of room, after this call read the app (before).
    const chunk = Buffer.alloc(VALUE_CAP_BYTES, 1);
    for (let i = 0; i < 9; i++) await other.blobPut(app.id, `chunk-${i}`, chunk, "application/octet-stream", null);
    const used = await other.usage(app.id);
    await other.kvSet(app.id, "filler", JSON.stringify("f".repeat(APP_CAP_BYTES - used - 100 - 2)));
    expect(await other.usage(app.id)).toBe(APP_CAP_BYTES - 100);

    // This call read the usage before the other instance's writes (AppStorage.seenUsage).
    const seenUsage = h.storage.seenUsage.bind(h.storage);
    h.storage.seenUsage = () => Promise.resolve({ used: before.storedBytes, version: before.dataVersion });
    const error = await h
      .call(app, "fill", { n: 1000 })
      .then(
        () => null,
        (e: unknown) => e,
      )
      .finally(() => {
        h.storage.seenUsage = seenUsage;
      });
    expect(error).toBeInstanceOf(ApiError);
    // The op answers the refusal its writes met at commit, not a value built on them.
    expect((error as ApiError).status).toBe(413);
    expect((error as ApiError).kind).toBe("storage_full");
    expect(await h.storage.kvGet(app.id, "x")).toBe(JSON.stringify("a".repeat(10)));
    expect(await h.storage.usage(app.id)).toBe(APP_CAP_BYTES - 100);

    // A call that reads the app now is leased only the room left: set() refuses, and the app catches it.
    expect(await h.call(app, "fill", { n: 1000 })).toBe("storage_full");
    expect(await h.call(app, "fill", { n: 50 })).toBe("stored");
    expect(await h.storage.usage(app.id)).toBe(await exactUsage(h, app.id));
    expect(await h.storage.usage(app.id)).toBeLessThanOrEqual(APP_CAP_BYTES);
  });
});
