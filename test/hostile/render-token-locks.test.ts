import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DAY } from "../../src/config/clock.ts";
import { RENDER_TOKENS_KEPT } from "../../src/domain/app-page/render-tokens.ts";
import { createUser, type TestUser } from "../helpers/accounts.ts";
import { untilSomeoneWaitsOnALock } from "../helpers/pg-locks.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { openFrame, openShell } from "../helpers/web.ts";

const reachable = inject("pgAdminUrl") !== null;

const APP = `export const manifest = { id: "swept", routes: {} };
export default { async fetch() { return Response.json({ ok: true }); } };`;

// On PostgreSQL every token a statement deleted or cut short bumped the one token_epoch row as the
// statement ended (migration 022), and the transaction held it until it committed. The hourly
// sweep deletes expired render tokens in one statement: it locks them, then bumps that row. A
// frame load that cut its person's older tokens short (taking the epoch row) and then trimmed one
// the sweep had locked waited on the sweep while the sweep waited on it: PostgreSQL broke the
// deadlock a second later by failing one of them, the page load (500) or the sweep. The epoch now
// moves at commit (migration 025), and a render trims before it changes anything else. The sweep
// is played here step by step, on its own connection, so the two meet in exactly that order.
(reachable ? describe : describe.skip)(`hostile: a frame load meets the render-token sweep${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let server: TestServer;
  let person: TestUser;
  beforeAll(async () => {
    server = await startServer({ dialect: "postgres" });
    person = await createUser(server);
  });
  afterAll(async () => server.close());

  it("trims what the sweep holds after the sweep commits, and both finish", { timeout: 30_000 }, async () => {
    const appId = (await server.client.post("/app", { module: APP })).body.id as string;
    const query = await openShell(server, `/app/${appId}`, person.cookie);
    for (let i = 0; i < RENDER_TOKENS_KEPT; i++) await openFrame(server, appId, query);
    // The oldest of the person's frame tokens: the next load trims it, and it expired two days ago,
    // so the sweep deletes it too.
    const oldest = await server.ctx.db
      .selectFrom("tokens")
      .select("id")
      .where("app_id", "=", appId)
      .where("user_id", "=", person.id)
      .where("name", "=", "frame")
      .orderBy("created_at")
      .executeTakeFirstOrThrow();
    await server.ctx.db.updateTable("tokens").set({ expires_at: Date.now() - 2 * DAY }).where("id", "=", oldest.id).execute();

    const db = server.ctx.db;
    const swept = await db.transaction().execute(async (sweep) => {
      // The sweep's statement has reached the oldest token and locked it...
      await sweep.selectFrom("tokens").select("id").where("id", "=", oldest.id).forUpdate().execute();
      const load = server.client.get(`/app/${appId}/frame?t=${query}`);
      await untilSomeoneWaitsOnALock(db);
      // ...and ends, bumping the epoch row as its trigger does.
      const deleted = await sweep.deleteFrom("tokens").where("id", "=", oldest.id).executeTakeFirst();
      return { deleted: Number(deleted.numDeletedRows), load };
    });
    expect(swept.deleted).toBe(1);
    const loaded = await swept.load;
    expect(loaded.status, loaded.text.slice(0, 300)).toBe(200);
    const rows = await db.selectFrom("tokens").select("id").where("app_id", "=", appId).where("user_id", "=", person.id).where("name", "=", "frame").execute();
    expect(rows.length).toBe(RENDER_TOKENS_KEPT);
  });
});
