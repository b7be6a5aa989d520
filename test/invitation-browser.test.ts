import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeBrowser, launchBrowser, type TestBrowser } from "./helpers/browser.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const MODULE = `export const manifest = { id: "team-notes", displayName: "Team notes", routes: { hello: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "hello" }); } };
`;

/** Issue 15: the invitation flow as a person meets it — mail in the outbox → link → sign in → accept → the app opens. */
describeBrowser("share invitation in real Chromium", () => {
  let server: TestServer;
  let browser: TestBrowser;
  let owner: FixtureUser;
  let invitee: TestUser;

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
    invitee = await createUser(server);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("the invitee follows the mailed link, signs in, accepts, and lands on the app", { timeout: 90_000 }, async () => {
    const appId = (await server.client.post("/app", { module: MODULE }, { token: owner.token })).body.id as string;
    expect((await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: invitee.handle }, { token: owner.token })).body.status).toBe("pending");
    const [mail] = await server.ctx.mailer.to(invitee.email);
    expect(mail?.subject).toContain("Team notes");
    const link = /https?:\/\/\S+\/invitations\/[0-9a-f-]{36}/.exec(mail?.text ?? "")?.[0];
    expect(link).toBe(`${server.config.baseUrl}/invitations/${appId}`);

    const page = await browser.newPage();
    await page.goto(link ?? "");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await browser.screenshot(page, "invitation-1-sign-in");
    await page.getByLabel("Email or handle").fill(invitee.handle);
    await page.getByLabel("Password").fill(invitee.password);
    await page.getByRole("button", { name: "Sign in" }).click();

    await page.getByRole("button", { name: "Accept and open the app" }).waitFor();
    expect(await page.locator("main").textContent()).toContain(`@${owner.handle}`);
    await browser.screenshot(page, "invitation-2-accept");
    await page.getByRole("button", { name: "Accept and open the app" }).click();

    // The app's page, under its owner's canonical address, with the app's own frame in it.
    await page.waitForURL(`${server.config.baseUrl}/@${owner.handle}/team-notes`);
    await page.locator("iframe").first().waitFor();
    await browser.screenshot(page, "invitation-3-app");
    const listed = await server.client.get("/app", { token: invitee.token });
    expect(listed.body.apps).toEqual([expect.objectContaining({ id: appId, role: "collaborator" })]);
  });
});
