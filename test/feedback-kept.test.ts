import { afterAll, beforeAll, expect, it } from "vitest";
import { MINUTE, type ManualClock } from "../src/config/clock.ts";
import { FEEDBACK_KEPT } from "../src/domain/app-page/feedback.ts";
import { makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/**
 * Anyone who can open a public app may send it feedback (up to ~80 KiB a message); an app keeps
 * the newest FEEDBACK_KEPT, all the owner's list shows, where it kept every message for ever
 * (found by a growth audit: a stranger could fill the owner's database).
 */
describeEachDialect("feedback an app keeps", (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    clock = server.clock as ManualClock;
  });
  afterAll(async () => server.close());

  it(`is the newest ${FEEDBACK_KEPT}: older messages go as new ones come`, async () => {
    const owner = await makeUser(server);
    const appId = (await server.client.post("/app", { module: moduleSource(manifestOf("fb-kept")) }, { token: owner.token })).body.id as string;
    expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "public" }, { token: owner.token })).status).toBe(200);
    const stranger = await makeUser(server);
    const sent = FEEDBACK_KEPT + 15;
    for (let i = 0; i < sent; i++) {
      // 30 a minute per app and address; one message a millisecond apart, so their order is their time.
      clock.advance(i % 30 === 0 ? MINUTE + 1 : 1);
      expect((await server.client.post(`/app/${appId}/feedback`, { text: `message ${i}` }, { token: stranger.token })).status).toBe(201);
    }
    const stored = await server.ctx.db.selectFrom("feedback").select("text").where("app_id", "=", appId).execute();
    expect(stored.length).toBe(FEEDBACK_KEPT);
    const list = await server.client.get(`/app/${appId}/feedback`, { token: owner.token });
    const texts = (list.body.feedback as { text: string }[]).map((f) => f.text);
    expect({ newest: texts[0], oldest: texts.at(-1), count: texts.length }).toEqual({ newest: `message ${sent - 1}`, oldest: `message ${sent - FEEDBACK_KEPT}`, count: FEEDBACK_KEPT });
  });
});
