import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startServer, type TestServer } from "./helpers/server.ts";
import { EventReader } from "./helpers/sse.ts";

const reachable = inject("pgAdminUrl") !== null;

const MODULE = (id: string) => `export const manifest = { id: ${JSON.stringify(id)}, routes: { say: { access: "read", input: { type: "object" } } } };
export default { async fetch(request) {
  const { text } = await request.json();
  console.log(text);
  return Response.json({ ok: true, value: true });
} };`;

// Issue 49: each instance keeps the lines of the calls it ran; a follower on any instance sees
// lines written on every one, through NOTIFY, and only apps someone follows cost a notification.
(reachable ? describe : describe.skip)(`app logs across two instances on one PostgreSQL${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let a: TestServer;
  let b: TestServer;
  let listener: pg.Client;
  /** Every notification on the logs channel, as PostgreSQL delivered it. */
  const notified: { k: string; a: string }[] = [];
  const apps: Record<string, { id: string; token: string }> = {};

  beforeAll(async () => {
    a = await startServer({ dialect: "postgres" });
    const databaseUrl = a.config.databaseUrl;
    if (databaseUrl === null) throw new Error("instance A has no PostgreSQL URL");
    b = await startServer({ env: { DATABASE_URL: databaseUrl } });
    listener = new pg.Client({ connectionString: databaseUrl });
    await listener.connect();
    listener.on("notification", (message) => notified.push(JSON.parse(message.payload ?? "{}") as { k: string; a: string }));
    await listener.query("LISTEN brickyard_logs");
    for (const name of ["followed", "quiet"]) {
      const created = await a.client.post("/app", { module: MODULE(name) });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      apps[name] = { id: created.body.id, token: created.body.token };
    }
  });
  afterAll(async () => {
    await listener?.end();
    await b?.close();
    await a?.close();
  });

  const say = async (on: TestServer, app: string, text: string) => {
    const { id, token } = apps[app] ?? { id: "", token: "" };
    const res = await on.client.post(`/app/${id}/api/say`, { text }, { token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };

  it("a follower on B gets a line a call on A wrote within 1 s; each instance's ring holds its own calls' lines", async () => {
    const { id, token } = apps.followed ?? { id: "", token: "" };
    const events = await EventReader.open(`${b.url}/app/${id}/logs?follow=1`, { authorization: `Bearer ${token}` });
    try {
      expect(events.response.status).toBe(200);
      await events.next((e) => e.event === "hello");
      // B's word that it follows the app reaches A through PostgreSQL: until then A keeps its
      // lines to itself. Calls on A until one shows up on B.
      let n = 0;
      for (;;) {
        await say(a, "followed", `warming ${++n}`);
        if ((await events.within(200, (e) => e.event === "line")) !== null) break;
        expect(n).toBeLessThan(25);
      }
      await say(a, "followed", "measured from A");
      const answered = performance.now();
      const line = await events.next((e) => e.event === "line" && (e.data as { message: string }).message === "measured from A");
      expect(line.at - answered).toBeLessThan(1000);
      expect(line.data).toMatchObject({ op: "say", level: "info" });
      // B's own calls reach its follower without NOTIFY.
      await say(b, "followed", "written on B");
      await events.next((e) => e.event === "line" && (e.data as { message: string }).message === "written on B");
      // Each instance answers GET with the lines of the calls it ran.
      const onA = await a.client.get(`/app/${id}/logs`, { token });
      const onB = await b.client.get(`/app/${id}/logs`, { token });
      expect((onA.body.lines as { message: string }[]).map((l) => l.message)).toContain("measured from A");
      expect((onB.body.lines as { message: string }[]).map((l) => l.message)).toEqual(["written on B"]);
    } finally {
      await events.close();
    }
  });

  it("a line too long for one notification reaches the other instance cut to fit, and whole on its own", async () => {
    const { id, token } = apps.followed ?? { id: "", token: "" };
    const events = await EventReader.open(`${b.url}/app/${id}/logs?follow=1`, { authorization: `Bearer ${token}` });
    try {
      await events.next((e) => e.event === "hello");
      const long = `long:${"é".repeat(6000)}`;
      await say(a, "followed", long);
      const line = await events.next((e) => e.event === "line" && (e.data as { message: string }).message.startsWith("long:"));
      const message = (line.data as { message: string }).message;
      expect(message.endsWith("…")).toBe(true);
      expect(message.length).toBeLessThan(long.length);
      expect(long.startsWith(message.slice(0, -1))).toBe(true);
      const [whole] = (await a.client.get(`/app/${id}/logs?limit=1`, { token })).body.lines as { message: string }[];
      expect(whole?.message).toBe(long);
    } finally {
      await events.close();
    }
  });

  it("an app nobody follows logs without a single notification", async () => {
    const { id } = apps.quiet ?? { id: "" };
    for (let i = 0; i < 5; i++) await say(a, "quiet", `unwatched ${i}`);
    // A notification sent now is delivered after any the calls above sent: then none of them was about this app.
    const marker = new pg.Client({ connectionString: a.config.databaseUrl ?? "" });
    await marker.connect();
    await marker.query(`select pg_notify('brickyard_logs', '{"k":"marker","a":"-"}')`);
    await marker.end();
    await expect.poll(() => notified.some((n) => n.k === "marker"), { timeout: 5000 }).toBe(true);
    expect(notified.filter((n) => n.a === id)).toEqual([]);
    expect(notified.some((n) => n.k === "lines" && n.a === apps.followed?.id)).toBe(true);
  });
});
