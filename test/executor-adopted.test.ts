import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

// A source write builds its code before it commits, under a staged key, and the revision it
// publishes takes that isolate over (Executor.stage, `adopt`). The supervisor keeps the loader
// name the isolate was built under. Before, it evicted the revision's own key, which the loader
// had never built: that registered a build failing with "not loaded", kept under the revision's
// key for the life of the process, and the staged isolate itself was never freed.
const MANIFEST = { routes: { who: {} } };
// Module state lives as long as the isolate: the count says whether it was built again.
const counting = (name: string) => `let calls = 0;\n${appModule({ who: `async () => ${JSON.stringify(name)} + " " + ++calls` }, MANIFEST)}`;
const isolate = { secretsVersion: 0, caps: [], lane: "claimed", ownerId: null } as const;

describe("executor: a staged isolate taken over by its revision", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1, tuning: { isolateIdleMs: 300, pingIntervalMs: 50, channelRotateCalls: 4 } });
  });
  afterAll(async () => h.close());

  /** Publishes `id` and has its revision take over a staged build of different code, which tells the two apart. */
  async function adopted(id: string) {
    const app = h.code.publish(id, counting("published"), MANIFEST);
    const { key, built } = await h.executor.stage({ appId: app.id, ...isolate }, { module: counting("staged"), imports: [], origins: [], routes: MANIFEST.routes });
    await built;
    await h.executor.warm({ appId: app.id, revision: app.revision, ...isolate, adopt: key });
    return app;
  }

  it("answers again after its idle eviction, from a fresh build", async () => {
    const app = await adopted("idle");
    expect(await h.call(app, "who")).toBe("staged 1");
    await h.nextEvent((e) => e.type === "evicted" && e.key.startsWith(`${app.id}:${app.revision}:`));
    expect(await h.call(app, "who")).toBe("published 1");
  });

  it("is the isolate a fresh channel finds, not a second build", async () => {
    const app = await adopted("rotated");
    const rotated = h.nextEvent((e) => e.type === "channel_rotated");
    for (let i = 1; i <= 4; i++) expect(await h.call(app, "who")).toBe(`staged ${i}`);
    await rotated;
    expect(await h.call(app, "who")).toBe("staged 5");
  });
});
