import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, manifestOf, moduleSource, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/** Owners answer feedback by mail (issue 19): the API route and its refusals, on both dialects. */
describeEachDialect("feedback replies", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;
  beforeAll(async () => {
    server = await startServer({ dialect });
    owner = await makeUser(server);
    appId = (await server.client.post("/app", { module: moduleSource(manifestOf("replied", ["x"], { displayName: "Replied app" })) }, { token: owner.token })).body.id;
  });
  afterAll(async () => server.close());

  const reply = (feedbackId: string, text: string, token: string) => server.client.post(`/app/${appId}/feedback/${feedbackId}/reply`, { text }, { token });

  it("mails the address left with the feedback, or its signed-in sender's, quoting it", async () => {
    const withEmail = await server.ctx.feedback.add({ id: appId, revision: 1 }, null, { text: "Dark mode?", email: "reader@example.test" });
    expect((await reply(withEmail, "On its way.", owner.token)).body).toEqual({ ok: true });
    const [mail] = await server.ctx.mailer.to("reader@example.test");
    expect(mail).toMatchObject({ subject: "Re: your feedback on Replied app" });
    expect(mail?.text).toContain(`@${owner.handle}, who runs Replied app, replied to your feedback:\n\nOn its way.`);
    expect(mail?.text).toContain("> Dark mode?");
    const member = await makeUser(server);
    const signedIn = await server.ctx.feedback.add({ id: appId, revision: 1 }, member.id, { text: "Nice" });
    expect((await reply(signedIn, "Thanks", owner.token)).status).toBe(200);
    expect((await server.ctx.mailer.to(`${member.handle}@example.test`)).some((m) => m.text.includes("Thanks"))).toBe(true);
  });

  it("refuses by kind: no one to reply to, unknown feedback, someone else's app, an empty reply", async () => {
    const anonymous = await server.ctx.feedback.add({ id: appId, revision: 1 }, null, { text: "hm" });
    expectError(await reply(anonymous, "hello?", owner.token), 409, "feedback_has_no_reply_recipient");
    expectError(await reply(crypto.randomUUID(), "hello?", owner.token), 404, "feedback_not_found");
    const stranger = await makeUser(server);
    expectError(await reply(anonymous, "hello?", stranger.token), 403, "forbidden");
    expectError(await server.client.post(`/app/${appId}/feedback/${anonymous}/reply`, { text: "" }, { token: owner.token }), 400, "invalid_request");
  });
});
