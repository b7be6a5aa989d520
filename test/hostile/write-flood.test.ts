import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeUser } from "../helpers/apps.ts";
import { LogCapture } from "../helpers/logs.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// Source writes are not metered (spec: rate limits), and each write of an app that ran lately
// used to start a build of its own (staged before the commit, or a warm-up after it), ~3–6 ms of
// workerd each. One owner's writers, with plain trivial code, queued builds faster than the
// process served them: within a second its pings went unanswered and the process was killed as
// hung, failing whatever its neighbours had in flight (seen twice in two runs of four writers,
// 1,179 and 1,551 writes in 3 s). Now an app has one staged build and one warm-up at a time.
// Apps of one owner written at once, each with a staged build and a warm-up of its own.
const APPS = 24;
const WRITERS = 32;
const source = (v: number) => `export const manifest = { id: "flood", routes: { which: {} } };
export default { async fetch() { return Response.json({ ok: true, value: ${v} }); } };`;

describe("hostile: one owner writing an app as fast as it can", () => {
  let server: TestServer;
  const logs = new LogCapture();
  beforeAll(async () => {
    server = await startServer({ logStream: logs });
  });
  afterAll(async () => server.close());

  it("does not take down the process its neighbour shares", async () => {
    // Paid accounts: both apps run on the claimed lane, in its one process here.
    const writer = await makeUser(server, "pro");
    const neighbour = await makeUser(server, "pro");
    const flood = await server.client.post("/app", { module: source(0) }, { token: writer.token });
    const other = await server.client.post("/app", { module: source(-1).replace('"flood"', '"next-door"') }, { token: neighbour.token });
    expect([flood.status, other.status]).toEqual([201, 201]);
    const call = (id: string, token: string) => server.client.post(`/app/${id}/api/which`, {}, { token });
    // Both have run, so every write of the flooded app builds ahead of its calls.
    expect((await call(flood.body.id, writer.token)).status).toBe(200);
    expect((await call(other.body.id, neighbour.token)).status).toBe(200);

    const until = Date.now() + 2500;
    let version = 0;
    let writes = 0;
    const neighbourStatuses: number[] = [];
    await Promise.all([
      ...Array.from({ length: 8 }, async () => {
        while (Date.now() < until) {
          const put = await server.client.put(`/app/${flood.body.id}`, { module: source(++version) }, { token: writer.token });
          expect(put.status, JSON.stringify(put.body)).toBe(200);
          writes += 1;
        }
      }),
      (async () => {
        while (Date.now() < until) neighbourStatuses.push((await call(other.body.id, neighbour.token)).status);
      })(),
    ]);
    await server.ctx.runner.warmed(flood.body.id);

    const faults = logs.lines().filter((line) => line.msg === "executor fault");
    console.warn(`write flood: ${writes} writes in 2.5 s, ${neighbourStatuses.length} neighbour calls, ${faults.length} executor faults`);
    expect(faults).toEqual([]);
    expect(neighbourStatuses.length).toBeGreaterThan(0);
    expect(neighbourStatuses.filter((status) => status !== 200)).toEqual([]);
    // The newest write is the one that runs.
    const source_ = await server.client.get(`/app/${flood.body.id}/source`, { token: writer.token });
    const newest = Number(/value: (-?\d+)/.exec(String(source_.body.module))?.[1]);
    expect((await call(flood.body.id, writer.token)).body.value).toBe(newest);
  });

  // Each app has at most one staged build and one warm-up at a time, but nothing bounds them
  // across apps: what keeps them few is that a write costs Node more than its build costs workerd
  // (~8 ms against 3–6 here; 32 writers over 24 apps never had more than 4 builds under way).
  it("across many apps at once: the process its neighbour shares stays up, and each app runs its newest write", async () => {
    const writer = await makeUser(server, "pro");
    const neighbour = await makeUser(server, "pro");
    const call = (id: string, token: string) => server.client.post(`/app/${id}/api/which`, {}, { token });
    const ids: string[] = [];
    for (let i = 0; i < APPS; i++) {
      const created = await server.client.post("/app", { module: source(0).replace('"flood"', `"many-${i}"`) }, { token: writer.token });
      ids.push(created.body.id as string);
      // Called once: each app's writes are built ahead from here on (staged, then warmed).
      expect((await call(created.body.id, writer.token)).status).toBe(200);
    }
    const other = await server.client.post("/app", { module: source(-1).replace('"flood"', '"many-next-door"') }, { token: neighbour.token });
    expect((await call(other.body.id, neighbour.token)).status).toBe(200);

    // Every build a write starts, staged or warm-up, counted while it is under way.
    const { operations } = server.ctx;
    const [warm, stage] = [operations.warm.bind(operations), operations.stage.bind(operations)];
    let building = 0;
    let most = 0;
    const counted = <T>(work: Promise<T>) => {
      most = Math.max(most, ++building);
      void work.finally(() => (building -= 1)).catch(() => undefined);
      return work;
    };
    operations.warm = (...args) => counted(warm(...args));
    operations.stage = async (...args) => {
      const staged = await stage(...args);
      return { ...staged, built: counted(staged.built) };
    };
    const faultsBefore = logs.lines().filter((line) => line.msg === "executor fault").length;
    try {
      const until = Date.now() + 2500;
      let version = 0;
      const neighbourStatuses: number[] = [];
      await Promise.all([
        ...Array.from({ length: WRITERS }, async (_, w) => {
          for (let i = w; Date.now() < until; i += WRITERS) {
            const id = ids[i % APPS] ?? "";
            const v = ++version;
            const put = await server.client.put(`/app/${id}`, { module: source(v).replace('"flood"', `"many-${i % APPS}"`) }, { token: writer.token });
            expect(put.status, JSON.stringify(put.body)).toBe(200);
          }
        }),
        (async () => {
          while (Date.now() < until) neighbourStatuses.push((await call(other.body.id, neighbour.token)).status);
        })(),
      ]);
      for (const id of ids) await server.ctx.runner.warmed(id);
      console.warn(`write flood over ${APPS} apps: ${version} writes, at most ${most} builds under way at once, ${neighbourStatuses.length} neighbour calls`);
      expect(logs.lines().filter((line) => line.msg === "executor fault").length).toBe(faultsBefore);
      expect(neighbourStatuses.filter((status) => status !== 200)).toEqual([]);
    } finally {
      operations.warm = warm;
      operations.stage = stage;
    }
    // What each app runs is its newest write, whether it was built ahead or by this call.
    for (const id of ids) {
      const res = await call(id, writer.token);
      const source_ = await server.client.get(`/app/${id}/source`, { token: writer.token });
      expect(res.body.value, id).toBe(Number(/value: (-?\d+)/.exec(String(source_.body.module))?.[1]));
    }
  });
});
