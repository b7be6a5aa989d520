import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

const KV = "svc:storage/kv@1.0";

/** The executor channel's rotation (see pool.ts rotate()); executor-level, so SQLite only. */
describe("executor: channel rotation under load", () => {
  let h: Harness;
  beforeAll(async () => {
    // A channel is replaced every 25 calls, so a few hundred calls rotate it many times.
    h = await startHarness({ dialect: "sqlite", processes: 2, tuning: { channelRotateCalls: 25 } });
  });
  afterAll(async () => h.close());

  it("answers every call while channels rotate, and KV stays coherent across them", async () => {
    const app = {
      ...h.code.publish(
        "rotating",
        appModule({
          step: `async (i, env) => { await new Promise((r) => setTimeout(r, i.ms)); await env.KV.set("k" + i.n, i.n); return env.KV.get("k" + i.n); }`,
          read: `async (i, env) => env.KV.get(i.k)`,
        }),
        { routes: { step: {}, read: { access: "read" } }, capabilities: { imports: [KV] } },
      ),
      plan: "enterprise" as const,
    };
    for (let round = 0; round < 20; round++) {
      const values = await Promise.all(Array.from({ length: 16 }, (_, i) => h.call(app, "step", { n: round * 16 + i, ms: i % 4 })));
      expect(values).toEqual(Array.from({ length: 16 }, (_, i) => round * 16 + i));
      // Overwrite one key outside any op; every later read, on either process, sees it.
      await h.storage.kvSet(app.id, "shared", JSON.stringify(round));
      const reads = await Promise.all(Array.from({ length: 8 }, () => h.call(app, "read", { k: "shared" })));
      expect(reads).toEqual(Array.from({ length: 8 }, () => round));
    }
    expect(h.events.filter((e) => e.type === "channel_rotated").length).toBeGreaterThan(10);
    expect(h.events.filter((e) => e.type === "fault")).toEqual([]);
  });
});
