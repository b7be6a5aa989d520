import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ManualClock } from "../src/config/clock.ts";
import { ACCESS_RECHECK_MS } from "../src/routes/app-page/stream-access.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { verifiedUser } from "./helpers/mail.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { EventReader, type SentEvent } from "./helpers/sse.ts";

// An app that prints its input (log lines) and writes a KV key named after it (data events).
const APP = (id: string) => `export const manifest = {
  id: ${JSON.stringify(id)},
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { say: { access: "write", input: { type: "object", properties: { text: { type: "string" } } } } },
};
export default { async fetch(request, env) {
  const input = await request.json();
  console.log("said:", input.text);
  await env.KV.set("key-" + input.text, 1);
  return Response.json({ ok: true, value: null });
} };`;

/**
 * An open stream of an app's log lines (`/app/{id}/logs?follow=1`) or events (`/app/{id}/events`)
 * re-checks its reader's access as it goes (routes/app-page/stream-access.ts): when access ends
 * (a share revoked, a token revoked, a member removed, the app made private), the next event is
 * the refusal, in the envelope, and the stream ends; what the app prints or writes after reaches
 * no one who could not ask for it now. A yes stands for ACCESS_RECHECK_MS of the service's clock,
 * moved here by hand past it.
 */
describe("open streams after their reader's access ends", () => {
  let server: TestServer;
  let owner: FixtureUser;
  beforeAll(async () => {
    server = await startServer({ clock: "manual" });
  });
  afterAll(async () => server.close());

  async function sharedApp(manifestId: string, role: "collaborator" | "viewer"): Promise<{ appId: string; grantee: FixtureUser; shareId: string }> {
    owner = await makeUser(server);
    const grantee = await makeUser(server);
    const appId = (await server.client.post("/app", { module: APP(manifestId) }, { token: owner.token })).body.id as string;
    const invited = await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: grantee.handle, role }, { token: owner.token });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: grantee.token })).status).toBe(200);
    return { appId, grantee, shareId: invited.body.shareId as string };
  }

  const say = async (appId: string, text: string) => expect((await server.client.post(`/app/${appId}/api/say`, { text }, { token: owner.token })).status).toBe(200);

  /** After access ended: the yes that stood goes stale, the app writes, and the stream's next event is its end. */
  async function expectEnded(stream: EventReader, appId: string, kind: string): Promise<void> {
    (server.clock as ManualClock).advance(ACCESS_RECHECK_MS);
    await say(appId, "after-access-ended");
    const next = await stream.next();
    expect({ event: next.event, kind: (next.data as { error?: { kind: string } }).error?.kind }).toEqual({ event: "error", kind });
    // Nothing follows the refusal: the stream is over.
    const rest: SentEvent[] = await stream.until(() => false);
    expect(rest).toEqual([]);
  }

  it("logs: a collaborator whose share is revoked gets 403 forbidden in the stream, not the lines after", async () => {
    const { appId, grantee, shareId } = await sharedApp("logs-share", "collaborator");
    const stream = await EventReader.open(`${server.url}/app/${appId}/logs?follow=1`, { authorization: `Bearer ${grantee.token}` });
    try {
      await stream.next((e) => e.event === "hello");
      await say(appId, "before");
      expect((await stream.next()).event).toBe("line");
      expect((await server.client.post(`/api/v1/apps/${appId}/shares/${shareId}/revoke`, undefined, { token: owner.token })).status).toBe(200);
      expectError(await server.client.get(`/app/${appId}/logs`, { token: grantee.token }), 403, "forbidden");
      await expectEnded(stream, appId, "forbidden");
    } finally {
      await stream.close();
    }
  });

  it("logs: a stream of a revoked user token ends unauthorized", async () => {
    owner = await makeUser(server);
    const appId = (await server.client.post("/app", { module: APP("logs-token") }, { token: owner.token })).body.id as string;
    const minted = await server.client.post("/api/token", { name: "agent" }, { token: owner.token });
    expect(minted.status).toBe(201);
    const stream = await EventReader.open(`${server.url}/app/${appId}/logs?follow=1`, { authorization: `Bearer ${minted.body.token}` });
    try {
      await stream.next((e) => e.event === "hello");
      expect((await server.client.delete(`/api/token/${minted.body.id}`, { token: owner.token })).status).toBe(200);
      await expectEnded(stream, appId, "unauthorized");
    } finally {
      await stream.close();
    }
  });

  it("logs: a team member's session stream ends forbidden when they are removed from the team", async () => {
    owner = await makeUser(server, "pro");
    const slug = `t-${owner.handle}`;
    const teamId = (await server.client.post("/api/v1/teams", { slug }, { token: owner.token })).body.team.id as string;
    const member = await verifiedUser(server);
    const invited = await server.client.post(`/api/v1/teams/${teamId}/invitations`, { email: member.email, role: "member" }, { token: owner.token });
    expect(invited.status).toBe(201);
    const form = { cookie: member.cookie, headers: { origin: server.config.baseUrl } };
    expect((await server.client.post(`/api/v1/team-invitations/${invited.body.invitation.id}/accept`, undefined, form)).status).toBe(200);
    const appId = (await server.client.post("/app", { module: APP("logs-team") }, { token: owner.token })).body.id as string;
    expect((await server.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: owner.token })).status).toBe(200);
    const stream = await EventReader.open(`${server.url}/app/${appId}/logs?follow=1`, { cookie: member.cookie });
    try {
      await stream.next((e) => e.event === "hello");
      expect((await server.client.delete(`/api/v1/teams/${teamId}/members/${member.id}`, { token: owner.token })).body.removed).toBe(true);
      await expectEnded(stream, appId, "forbidden");
    } finally {
      await stream.close();
    }
  });

  it("events: a viewer whose share is revoked gets no more key names", async () => {
    const { appId, grantee, shareId } = await sharedApp("events-share", "viewer");
    const stream = await EventReader.open(`${server.url}/app/${appId}/events`, { authorization: `Bearer ${grantee.token}` });
    try {
      await stream.next((e) => e.event === "hello");
      expect((await server.client.post(`/api/v1/apps/${appId}/shares/${shareId}/revoke`, undefined, { token: owner.token })).status).toBe(200);
      await expectEnded(stream, appId, "forbidden");
    } finally {
      await stream.close();
    }
  });

  it("events: a signed-in visitor's session stream ends when the app is made private", async () => {
    owner = await makeUser(server);
    const visitor = await makeUser(server);
    const appId = (await server.client.post("/app", { module: APP("events-vis") }, { token: owner.token })).body.id as string;
    expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "signed-in" }, { token: owner.token })).status).toBe(200);
    const stream = await EventReader.open(`${server.url}/app/${appId}/events`, { cookie: visitor.cookie });
    try {
      await stream.next((e) => e.event === "hello");
      await say(appId, "still-signed-in");
      expect((await stream.next()).event).toBe("data");
      expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "private" }, { token: owner.token })).status).toBe(200);
      await expectEnded(stream, appId, "forbidden");
    } finally {
      await stream.close();
    }
  });
});
