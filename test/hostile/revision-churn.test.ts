import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "../helpers/executor.ts";

// A process holds at most `maxIsolatesPerProcess` isolates, least recently used out first. An app
// that publishes revision after revision and calls each used to leave every old revision's isolate
// there for ten idle minutes, so one app's edits alone could fill the table and push its
// neighbours' isolates out: each of their next calls paid a fresh build. A newer build of an app
// now evicts its older ones (IsolateTable), so an app holds its current revision and at most one
// staged build, however fast it writes.
const MANIFEST = { routes: { count: {} } };
// Module state lives as long as the isolate: the count says whether it was built again.
const counter = `let calls = 0;\n${appModule({ count: "async () => ++calls" }, MANIFEST)}`;

describe("hostile: an app writing revisions fast does not evict its neighbours' isolates", () => {
  const CAPACITY = 4;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1, tuning: { maxIsolatesPerProcess: CAPACITY } });
  });
  afterAll(async () => h.close());

  it(`keeps the neighbours' isolates through ${CAPACITY * 5} revisions of one app, each called and each staged`, async () => {
    const neighbours = ["n1", "n2"].map((id) => h.code.publish(id, counter, MANIFEST));
    for (const n of neighbours) expect(await h.call(n, "count")).toBe(1);

    const isolate = { secretsVersion: 0, caps: [], lane: "claimed", ownerId: null } as const;
    for (let revision = 1; revision <= CAPACITY * 5; revision++) {
      // A staged build too, as a source write makes one, and never adopted: a write that failed.
      const { built } = await h.executor.stage({ appId: "churn", ...isolate }, { module: counter, imports: [], origins: [], routes: MANIFEST.routes });
      await built;
      const app = h.code.publish("churn", counter, MANIFEST, revision);
      expect(await h.call(app, "count")).toBe(1);
    }

    // Still the isolates built for the first calls: their module state went on counting.
    for (const n of neighbours) expect(await h.call(n, "count")).toBe(2);
  });
});

describe("hostile: an app writing revisions fast does not grow its process", () => {
  const REVISIONS = 64;
  const MiB = 1024 * 1024;
  let h: Harness;
  beforeAll(async () => {
    // Evictions as fast as the revisions come, and channels rotated often: workerd frees an
    // evicted isolate once the channel that held its session closes.
    h = await startHarness({ dialect: "sqlite", processes: 1, tuning: { evictionsPerTick: 100, pingIntervalMs: 50, channelRotateCalls: 16 } });
  });
  afterAll(async () => h.close());

  // Each revision's isolate was staged by its write and taken over by the revision, as every
  // source write of an app that ran lately does. Eviction used to abort the revision's own key,
  // which the loader never built, so every staged isolate stayed: ~1.5 MiB a write.
  it(`gives back the isolates of ${REVISIONS} revisions, each staged and taken over`, async () => {
    const isolate = { secretsVersion: 0, caps: [], lane: "claimed", ownerId: null } as const;
    const revise = async (revision: number) => {
      const { key, built } = await h.executor.stage({ appId: "churn", ...isolate }, { module: counter, imports: [], origins: [], routes: MANIFEST.routes });
      await built;
      const app = h.code.publish("churn", counter, MANIFEST, revision);
      await h.executor.warm({ appId: app.id, revision, ...isolate, adopt: key });
      expect(await h.call(app, "count")).toBe(1);
    };
    // One process, warmed by a revision of its own before the baseline is read.
    await revise(1);
    const rss = () => h.executor.pool.rssBytes();
    const before = rss();

    const allEvicted = new Promise<void>((resolve) => {
      let evicted = 0;
      void h.nextEvent((e) => e.type === "evicted" && e.key.startsWith("churn:") && ++evicted === REVISIONS).then(() => resolve());
    });
    for (let revision = 2; revision <= REVISIONS + 1; revision++) await revise(revision);
    await allEvicted;
    // Freed once the channels that held their sessions have closed: a neighbour's calls rotate
    // the channel every 16 calls until the memory is back, or 400 calls have gone by.
    const neighbour = h.code.publish("neighbour", counter, MANIFEST);
    for (let i = 0; rss() - before > 32 * MiB && i < 400; i++) await h.call(neighbour, "count");
    console.warn(`revision churn: RSS ${(before / MiB).toFixed(0)} → ${(rss() / MiB).toFixed(0)} MiB over ${REVISIONS} taken-over revisions`);
    expect(rss() - before).toBeLessThan(32 * MiB);
  });
});
