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
