import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { HOUR, type ManualClock } from "../src/config/clock.ts";
import { createUser } from "./helpers/accounts.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { mailedLink as mailedVerifyLink, VERIFY_LINK } from "./helpers/mail.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const MODULE = `export const manifest = { id: "invite-app", routes: { hi: { access: "write" } } };
export default { async fetch() { return Response.json({ ok: true, value: "hi" }); } };
`;

const mailedLink = (server: TestServer, address: string) => mailedVerifyLink(server, address, VERIFY_LINK);

/** Issue 15: email ownership first — what was sent to an address reaches only its verified owner. */
describeEachDialect("email verification and invitations by email", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;

  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    server.ctx.limiter.reset();
    owner = await makeUser(server);
    appId = (await server.client.post("/app", { module: MODULE }, { token: owner.token })).body.id;
  });

  it("an invitation to an address reaches the account only after it follows the mailed link", async () => {
    const person = await createUser(server);
    expect((await server.client.get("/api/me", { token: person.token })).body.user.emailVerified).toBe(false);
    const invited = await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: person.email }, { token: owner.token });
    expect(invited.body).toMatchObject({ ok: true, status: "invited" });
    // The address is told how to take it: sign up with it, confirm it, then open the invitation.
    const invitation = (await server.ctx.mailer.to(person.email)).find((mail) => mail.subject.includes("shared"));
    expect(invitation?.text).toMatch(/confirm it[\s\S]*\/invitations\//);
    // Holding an account with that address proves nothing yet.
    expect((await server.client.get("/api/v1/shares/incoming", { token: person.token })).body.shares).toEqual([]);
    expectError(await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: person.token }), 403, "forbidden");

    const link = await mailedLink(server, person.email);
    const page = await server.client.get(link, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.text).toContain("Email confirmed");
    expect((await server.client.get("/api/me", { token: person.token })).body.user.emailVerified).toBe(true);
    expect((await server.client.get("/api/v1/shares/incoming", { token: person.token })).body.shares).toEqual([expect.objectContaining({ appId, role: "collaborator" })]);
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: person.token })).body).toEqual({ ok: true });
    expect((await server.client.post(`/app/${appId}/api/hi`, {}, { token: person.token })).status).toBe(200);

    // The link worked once; a verified address is invited as an account from now on.
    expect((await server.client.get(link, { headers: { accept: "text/html" } })).status).toBe(404);
    const other = await makeUser(server);
    const otherApp = (await server.client.post("/app", { module: MODULE }, { token: other.token })).body.id as string;
    expect((await server.client.post(`/api/v1/apps/${otherApp}/shares`, { grantee: person.email }, { token: other.token })).body.status).toBe("pending");
  });

  it("links expire after 48 hours; a resend mails a fresh one; a verified account is told so", async () => {
    const person = await createUser(server);
    const stale = await mailedLink(server, person.email);
    (server.clock as ManualClock).advance(48 * HOUR + 1);
    const refreshed = (await server.ctx.tokens.mintUserToken(person.id, {})).token;
    expect((await server.client.get(stale, { headers: { accept: "text/html" } })).status).toBe(401);
    expect((await server.client.post("/api/auth/verify-email/resend", undefined, { token: refreshed })).body).toEqual({ ok: true });
    const fresh = await mailedLink(server, person.email);
    expect(fresh).not.toBe(stale);
    expect((await server.client.get(fresh, { headers: { accept: "text/html" } })).status).toBe(200);
    expect((await server.client.post("/api/auth/verify-email/resend", undefined, { token: refreshed })).body).toEqual({ ok: true, alreadyVerified: true });
    expectError(await server.client.post("/api/auth/verify-email/resend"), 401, "sign_in_required");
  });
});
