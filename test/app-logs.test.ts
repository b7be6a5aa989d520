import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { EventReader } from "./helpers/sse.ts";

const LOGGER = `export const manifest = {
  id: "logger",
  capabilities: { imports: ["svc:logging/emit@1.0"] },
  routes: {
    three: { access: "read" },
    flood: { access: "read", input: { type: "object", properties: { n: { type: "integer" } } } },
    secret: { access: "read" },
    slow: { access: "read", input: { type: "object", properties: { tag: { type: "string" } } } },
    emit: { access: "read" },
    big: { access: "read" },
    objects: { access: "read" },
    thrower: { access: "read" },
  },
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export default { async fetch(request, env) {
  const op = request.headers.get("x-svc-op");
  const input = await request.json();
  if (op === "three") { console.debug("checking"); console.log("bumped to", 1); console.error("almost failed"); }
  if (op === "flood") for (let i = 0; i < (input.n ?? 100); i++) console.log("line", i);
  if (op === "secret") {
    console.log("raw:", env.API_KEY);
    console.log(JSON.stringify({ key: env.API_KEY }));
    console.warn("https://api.example.test/v1?key=" + encodeURIComponent(env.API_KEY));
    console.info({ nested: { key: env.API_KEY } });
    await env.LOG.emit("error", "emitted " + env.API_KEY, { key: env.API_KEY });
  }
  if (op === "slow") {
    console.log("start", input.tag);
    await sleep(30);
    console.log("after timer", input.tag);
    await Promise.resolve();
    console.log("end", input.tag);
  }
  if (op === "emit") { await env.LOG.emit("warning", "from emit", { n: 1 }); console.log("from console"); }
  if (op === "big") { console.log("a".repeat(20000)); console.log("never kept"); }
  if (op === "objects") { const cyclic = { name: "loop" }; cyclic.self = cyclic; console.log({ a: 1, b: [2, 3] }, 42n, cyclic, new Error("shown")); }
  if (op === "thrower") { console.error("about to throw"); throw new Error("boom"); }
  return Response.json({ ok: true, value: op });
} };`;

/** The secret: quotes, a backslash and characters URLs encode, so each form differs from the raw one. */
const SECRET = 'sk_live "quoted" \\ a/b?c=d&e';

interface Line {
  time: string;
  level: string;
  op: string;
  requestId: string | null;
  message: string;
}

/** Issue 49: what an app's code prints, per call, as its owner and agents read it. */
describe("app logs", () => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;

  const call = async (op: string, input: unknown = {}, requestId?: string) => {
    const res = await server.client.post(`/app/${appId}/api/${op}`, input, { token: owner.token, ...(requestId === undefined ? {} : { headers: { "x-request-id": requestId } }) });
    return res;
  };
  const lines = async (query = ""): Promise<Line[]> => {
    const res = await server.client.get(`/app/${appId}/logs${query}`, { token: owner.token });
    expect(res.status).toBe(200);
    return res.body.lines as Line[];
  };

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
    const created = await server.client.post("/app", { module: LOGGER }, { token: owner.token });
    expect(created.status).toBe(201);
    appId = created.body.id as string;
    expect((await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: SECRET }, { token: owner.token })).status).toBeLessThan(300);
  });
  afterAll(async () => server.close());

  it("an op that logs 3 lines at 3 levels: exactly those lines, newest first, with op, level and request id", async () => {
    expect((await call("three", {}, "req-three-1")).status).toBe(200);
    const got = (await lines("?op=three")).map(({ level, op, requestId, message }) => ({ level, op, requestId, message }));
    expect(got).toEqual([
      { level: "error", op: "three", requestId: "req-three-1", message: "almost failed" },
      { level: "info", op: "three", requestId: "req-three-1", message: "bumped to 1" },
      { level: "debug", op: "three", requestId: "req-three-1", message: "checking" },
    ]);
    const [newest] = await lines("?op=three&limit=1");
    expect(Date.parse(newest?.time ?? "")).toBeGreaterThan(Date.now() - 60_000);
  });

  it("100 lines from one call: 64 kept, then one truncated marker", async () => {
    expect((await call("flood", { n: 100 }, "req-flood")).status).toBe(200);
    const got = (await lines("?op=flood&limit=1000")).filter((l) => l.requestId === "req-flood").reverse();
    expect(got).toHaveLength(65);
    expect(got.slice(0, 64).map((l) => l.message)).toEqual(Array.from({ length: 64 }, (_, i) => `line ${i}`));
    expect(got[64]).toMatchObject({ level: "warn", message: expect.stringContaining("[truncated] 36 more lines not kept") });
  });

  it("a line past the call's 16 KB is cut, and what follows it is counted in the marker", async () => {
    expect((await call("big", {}, "req-big")).status).toBe(200);
    const got = (await lines("?op=big")).filter((l) => l.requestId === "req-big").reverse();
    expect(got).toHaveLength(2);
    expect(Buffer.byteLength(got[0]?.message ?? "")).toBeLessThanOrEqual(16 * 1024 + 3);
    expect(got[0]?.message.endsWith("a…")).toBe(true);
    expect(got[1]?.message).toContain("[truncated] 1 more line not kept");
  });

  it("a secret logged raw, JSON-escaped, inside a URL, inside an object and through env.LOG never appears", async () => {
    expect((await call("secret", {}, "req-secret")).status).toBe(200);
    const got = (await lines("?op=secret")).filter((l) => l.requestId === "req-secret");
    expect(got).toHaveLength(5);
    const text = JSON.stringify(got);
    const escaped = JSON.stringify(SECRET).slice(1, -1);
    for (const form of [SECRET, escaped, JSON.stringify(escaped).slice(1, -1), encodeURIComponent(SECRET), "sk_live"]) expect(text).not.toContain(form);
    for (const line of got) expect(line.message).toContain("[secret API_KEY]");
    expect(got.map((l) => l.level).sort()).toEqual(["error", "info", "info", "info", "warn"]);
  });

  it("two calls running side by side in one isolate: each line carries its own call's request id", async () => {
    const [a, b] = await Promise.all([call("slow", { tag: "A" }, "req-side-A"), call("slow", { tag: "B" }, "req-side-B")]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const got = await lines("?op=slow");
    expect(got).toHaveLength(6);
    for (const line of got) expect(line.requestId).toBe(`req-side-${line.message.split(" ").pop()}`);
    expect(got.filter((l) => l.requestId === "req-side-A").map((l) => l.message).reverse()).toEqual(["start A", "after timer A", "end A"]);
  });

  it("env.LOG.emit lines land in the same log with their level; values print as Node's console would", async () => {
    expect((await call("emit", {}, "req-emit")).status).toBe(200);
    const emitted = await lines("?op=emit");
    expect(emitted.map(({ level, message }) => ({ level, message })).sort((x, y) => x.message.localeCompare(y.message))).toEqual([
      { level: "info", message: "from console" },
      { level: "warn", message: 'from emit {"n":1}' },
    ]);
    expect((await call("objects")).status).toBe(200);
    const [line] = await lines("?op=objects");
    expect(line?.message).toMatch(/^\{"a":1,"b":\[2,3\]\} 42 \[object Object\] Error: shown\n/);
  });

  it("a call that throws keeps its lines", async () => {
    expect((await call("thrower", {}, "req-throw")).status).toBe(500);
    expect(await lines("?op=thrower")).toMatchObject([{ level: "error", requestId: "req-throw", message: "about to throw" }]);
  });

  it("filters by level (that level and above), op, since and limit", async () => {
    expect((await lines("?level=error")).every((l) => l.level === "error")).toBe(true);
    expect((await lines("?level=warn")).some((l) => l.level === "warn")).toBe(true);
    expect(await lines("?limit=2")).toHaveLength(2);
    const newest = (await lines("?limit=1"))[0];
    expect(await lines(`?since=${encodeURIComponent(newest?.time ?? "")}`)).toEqual([]);
    expect((await lines(`?since=2000-01-01T00:00:00Z&limit=1000`)).length).toBeGreaterThan(60);
    expect(await lines("?op=no-such-op")).toEqual([]);
  });

  it("bad queries are 400 invalid_request", async () => {
    for (const query of ["?limit=0", "?limit=1001", "?limit=ten", "?since=yesterday", "?level=verbose", "?follow=maybe", "?op="]) {
      const res = await server.client.get(`/app/${appId}/logs${query}`, { token: owner.token });
      expectError(res, 400, "invalid_request");
    }
    expectError(await server.client.get(`/app/00000000-0000-4000-8000-000000000000/logs`, { token: owner.token }), 404, "app_not_found");
  });

  it("follow: a line arrives within 1 s of the call that wrote it, filtered as asked", async () => {
    const events = await EventReader.open(`${server.url}/app/${appId}/logs?follow=1&level=info`, { authorization: `Bearer ${owner.token}` });
    expect(events.response.status).toBe(200);
    expect(events.response.headers.get("content-type")).toContain("text/event-stream");
    try {
      await events.next((e) => e.event === "hello");
      const started = performance.now();
      const answered = await call("three", {}, "req-follow");
      expect(answered.status).toBe(200);
      const line = await events.next((e) => e.event === "line");
      expect(line.data).toMatchObject({ op: "three", requestId: "req-follow", level: "info", message: "bumped to 1" });
      // From the moment the call was sent to the line's arrival on the stream.
      expect(line.at - started).toBeLessThan(1000);
      expect((await events.next((e) => e.event === "line")).data).toMatchObject({ level: "error", message: "almost failed" });
    } finally {
      await events.close();
    }
  });

  it("follow with since: the kept lines after it come first, oldest first", async () => {
    // Lines carry milliseconds: step past the newest line kept so far, so only this call's come after.
    const newest = Date.parse((await lines("?limit=1"))[0]?.time ?? new Date().toISOString());
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, newest + 2 - Date.now())));
    const since = new Date(newest).toISOString();
    expect((await call("three", {}, "req-since")).status).toBe(200);
    const events = await EventReader.open(`${server.url}/app/${appId}/logs?follow=1&op=three&since=${since}`, { authorization: `Bearer ${owner.token}` });
    try {
      await events.next((e) => e.event === "hello");
      expect((await events.next((e) => e.event === "line")).data).toMatchObject({ level: "debug", message: "checking", requestId: "req-since" });
    } finally {
      await events.close();
    }
  });

  it("a follower that never reads is cut off once it falls 1 MiB behind: the server holds no more for it", { timeout: 60_000 }, async () => {
    const heavy = await makeUser(server, "enterprise");
    const made = await server.client.post("/app", { module: LOGGER.replace('id: "logger"', 'id: "chatty"') }, { token: heavy.token });
    const id = made.body.id as string;
    const abort = new AbortController();
    const res = await fetch(`${server.url}/app/${id}/logs?follow=1`, { headers: { authorization: `Bearer ${heavy.token}` }, signal: abort.signal });
    try {
      expect(res.status).toBe(200);
      const open = server.ctx.streams.count;
      expect(open).toBeGreaterThanOrEqual(1);
      // 16 KB a call, never read: loopback's socket buffers take some megabytes, then Node's fill.
      for (let round = 0; round < 100 && server.ctx.streams.count >= open; round++) {
        const answers = await Promise.all(Array.from({ length: 8 }, () => server.client.post(`/app/${id}/api/big`, {}, { token: heavy.token })));
        expect(answers.every((a) => a.status === 200)).toBe(true);
      }
      expect(server.ctx.streams.count).toBe(open - 1);
    } finally {
      abort.abort();
    }
  });

  it("the app's own token reads its logs; another app's token and no credential do not", async () => {
    const anon = await server.client.post("/app", { module: LOGGER.replace('id: "logger"', 'id: "anon-logger"') });
    expect(anon.status).toBe(201);
    const anonId = anon.body.id as string;
    expect((await server.client.post(`/app/${anonId}/api/three`, {}, { token: anon.body.token })).status).toBe(200);
    const own = await server.client.get(`/app/${anonId}/logs`, { token: anon.body.token });
    expect(own.status).toBe(200);
    expect(own.body.lines).toHaveLength(3);
    expectError(await server.client.get(`/app/${appId}/logs`, { token: anon.body.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/logs`), 401, "unauthorized");
    expectError(await server.client.get(`/app/${appId}/logs?follow=1`), 401, "unauthorized");
  });

  it("an app's lines go with it when it is deleted", async () => {
    const made = await server.client.post("/app", { module: LOGGER.replace('id: "logger"', 'id: "short-lived"') }, { token: owner.token });
    const id = made.body.id as string;
    expect((await server.client.post(`/app/${id}/api/three`, {}, { token: owner.token })).status).toBe(200);
    expect(server.ctx.logs.read(id, { limit: 10 })).toHaveLength(3);
    expect((await server.client.delete(`/app/${id}`, { token: owner.token })).status).toBe(200);
    expect(server.ctx.logs.read(id, { limit: 10 })).toEqual([]);
  });
});
