import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, startHarness, type Harness } from "../helpers/executor.ts";

// A source write builds its code's isolate before it commits (Executor.stage), under a key of its
// own, and the warm-up after the commit takes it over (`adopt`). The supervisor renames a staged
// isolate only for the app it was built for: whatever key a frame names, one app's code never
// answers another app's calls.
const MANIFEST = { routes: { who: {} } };
const whoIs = (name: string) => appModule({ who: `async () => ${JSON.stringify(name)}` }, MANIFEST);

describe("hostile: a staged isolate serves only the app it was built for", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1 });
  });
  afterAll(async () => h.close());

  it("a warm-up of one app that names another app's staged isolate builds its own", async () => {
    const victim = h.code.publish("victim", whoIs("victim"), MANIFEST);
    const isolate = { secretsVersion: 0, caps: [], lane: "claimed", ownerId: null } as const;
    const { key, built } = await h.executor.stage({ appId: "attacker", ...isolate }, { module: whoIs("attacker"), imports: [], origins: [], routes: MANIFEST.routes });
    await built;

    await h.executor.warm({ appId: victim.id, revision: victim.revision, ...isolate, adopt: key });
    expect(await h.call(victim, "who")).toBe("victim");
  });

  it("the app it was built for takes it over, and runs the staged code", async () => {
    const app = h.code.publish("owner", whoIs("published"), MANIFEST);
    const isolate = { secretsVersion: 0, caps: [], lane: "claimed", ownerId: null } as const;
    // Staged code that differs from the published revision's shows which isolate answered.
    const { key, built } = await h.executor.stage({ appId: app.id, ...isolate }, { module: whoIs("staged"), imports: [], origins: [], routes: MANIFEST.routes });
    await built;

    await h.executor.warm({ appId: app.id, revision: app.revision, ...isolate, adopt: key });
    expect(await h.call(app, "who")).toBe("staged");
  });
});
