import { afterAll, beforeAll, expect, it } from "vitest";
import { Staged } from "../src/domain/operations/as-app.ts";
import { createUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { queryRecorder } from "./helpers/query-plans.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { signal } from "./helpers/signal.ts";

const moduleOf = (revision: number, id = "warmed", top = "") => `export const manifest = { id: "${id}", routes: { which: {} } };
${top}
export default { async fetch() { return Response.json({ ok: true, value: ${revision} }); } };`;

// The executor sends an isolate's code with its first run on a process, read from the revision's
// row: a call that reads no source found its isolate built already.
const readsSource = (sql: string) => /from "app_versions"/.test(sql);
const selectsSource = (sql: string) => /^select\b[\s\S]*\bfrom "app_versions"/i.test(sql);

describeEachDialect("a new revision's isolate is built when it is published", (dialect) => {
  let server: TestServer;
  let token: string;
  let userId: string;
  const recorder = queryRecorder();
  // The builds staged for source writes, by app: the runner's, seen on their way.
  const staged = new Map<string, Staged>();
  beforeAll(async () => {
    server = await startServer({ dialect, queryLog: recorder.log });
    ({ token, id: userId } = await createUser(server));
    // A write's staged build, seen from inside its transaction (Stager), as it goes.
    const { stager } = server.ctx;
    const stage = stager.stage.bind(stager);
    stager.stage = (app, prepared) => {
      const build = stage(app, prepared);
      if (build instanceof Staged) staged.set(app.id, build);
      return build;
    };
  });
  afterAll(async () => server.close());

  /** Calls the app; the revision that answered and whether the call read its source. */
  const call = async (id: string) => {
    let value: unknown;
    const queries = await recorder.record(async () => {
      const res = await server.client.post(`/app/${id}/api/which`, {}, { token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      value = res.body.value;
    });
    return { revision: value, readSource: queries.some((q) => readsSource(q.sql)) };
  };
  const source = (module: string) => ({ module, ui: null, styles: null });
  /** An app at revision 1 that ran once (so that its next revisions are built ahead). */
  const ranOnce = async (name: string) => {
    const created = await server.client.post("/app", { module: moduleOf(1, name) }, { token });
    const id = created.body.id as string;
    expect(await call(id)).toEqual({ revision: 1, readSource: true });
    return id;
  };

  it("builds it before the first call for an app that ran lately, so that call finds it loaded", async () => {
    const created = await server.client.post("/app", { module: moduleOf(1) }, { token });
    const id = created.body.id as string;
    expect(await call(id)).toEqual({ revision: 1, readSource: true });

    expect((await server.client.put(`/app/${id}`, { module: moduleOf(2) }, { token })).status).toBe(200);
    await server.ctx.runner.warmed(id);
    expect(await call(id)).toEqual({ revision: 2, readSource: false });
  });

  it("starts that build before the write commits, from the write's own code, and the first call runs that isolate", async () => {
    const id = await ranOnce("staged");

    let stagedBeforeCommit = false;
    const writing = await recorder.record(async () => {
      await server.ctx.apps.update(id, { kind: "user", userId }, source(moduleOf(2, "staged")), {
        // Inside the write's transaction: its isolate is being built, and is built before the commit.
        within: async () => {
          const build = staged.get(id);
          stagedBeforeCommit = build !== undefined;
          await build?.built();
        },
      });
      await server.ctx.runner.warmed(id);
    });
    expect(stagedBeforeCommit).toBe(true);
    // Built from the code in hand, and taken over as it was: neither the write's warm-up nor the
    // first call read the revision's source back (a build after the commit would have).
    expect(writing.filter((q) => selectsSource(q.sql))).toEqual([]);
    expect(await call(id)).toEqual({ revision: 2, readSource: false });
  });

  it("never lets a write that failed after its code was staged serve that code; the next write runs its own", async () => {
    const id = await ranOnce("failing");

    const failing = server.ctx.apps.update(id, { kind: "user", userId }, source(moduleOf(99, "failing")), {
      within: async () => {
        await staged.get(id)?.built();
        throw new Error("this write fails after its code was built");
      },
    });
    await expect(failing).rejects.toThrow("this write fails after its code was built");
    expect(staged.get(id)).toBeDefined();
    expect(await call(id)).toEqual({ revision: 1, readSource: false });

    expect((await server.client.put(`/app/${id}`, { module: moduleOf(2, "failing") }, { token })).status).toBe(200);
    await server.ctx.runner.warmed(id);
    expect(await call(id)).toEqual({ revision: 2, readSource: false });
  });

  it("a staged build whose module throws at its top level: the first call reports that throw, as without staging", async () => {
    const id = await ranOnce("throwing");

    // The staged build fails, and its isolate is gone, before the write commits: nothing to take over.
    await server.ctx.apps.update(id, { kind: "user", userId }, source(moduleOf(2, "throwing", `throw new Error("thrown at load");`)), {
      within: async () => void (await staged.get(id)?.built()),
    });
    await server.ctx.runner.warmed(id);
    const res = await server.client.post(`/app/${id}/api/which`, {}, { token });
    expect(res.status).toBe(500);
    expect(res.body.error.kind).toBe("operation_failed");
    expect(res.body.error.message).toContain("thrown at load");
  });

  it("leaves a create alone: a new app's first call builds it", async () => {
    const created = await server.client.post("/app", { module: moduleOf(1, "new") }, { token });
    const id = created.body.id as string;
    await server.ctx.runner.warmed(id);
    expect(await call(id)).toEqual({ revision: 1, readSource: true });
  });

  it("builds it for an app that has not run too, at its next write, without staging it before the commit", async () => {
    const created = await server.client.post("/app", { module: moduleOf(1, "cold") }, { token });
    const id = created.body.id as string;
    expect((await server.client.put(`/app/${id}`, { module: moduleOf(2, "cold") }, { token })).status).toBe(200);
    // Not staged before the commit: that is for apps that ran lately (Stager).
    expect(staged.has(id)).toBe(false);
    await server.ctx.runner.warmed(id);
    expect(await call(id)).toEqual({ revision: 2, readSource: false });
  });

  it("builds those of apps that have not run one at a time: a write while one is under way is left to its first call", async () => {
    const idle = async (name: string) => (await server.client.post("/app", { module: moduleOf(1, name) }, { token })).body.id as string;
    const write = async (id: string, name: string) => expect((await server.client.put(`/app/${id}`, { module: moduleOf(2, name) }, { token })).status).toBe(200);
    const [first, second, third] = [await idle("first-cold"), await idle("second-cold"), await idle("third-cold")];
    // The warm-up of the first app's write is held once it has begun, as a slow build would hold it.
    const { operations } = server.ctx;
    const warm = operations.warm.bind(operations);
    const held = signal();
    let begun = 0;
    operations.warm = async (...args) => {
      begun += 1;
      if (begun === 1) await held.wait;
      return warm(...args);
    };
    try {
      await write(first, "first-cold");
      await write(second, "second-cold");
      expect(begun).toBe(1);
      held.fire();
      await server.ctx.runner.warmed(first);
      expect(await call(second)).toEqual({ revision: 2, readSource: true });
      expect(await call(first)).toEqual({ revision: 2, readSource: false });
      // Once it is over, the next such write is built ahead again.
      await write(third, "third-cold");
      await server.ctx.runner.warmed(third);
      expect(begun).toBe(2);
      expect(await call(third)).toEqual({ revision: 2, readSource: false });
    } finally {
      held.fire();
      operations.warm = warm;
    }
  });
});
