import { afterAll, beforeAll, expect, it } from "vitest";
import { SECOND, type ManualClock } from "../src/config/clock.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeBrowser, launchBrowser, type TestBrowser } from "./helpers/browser.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeBrowser("claiming an agent's app in real Chromium", () => {
  let server: TestServer;
  let browser: TestBrowser;
  let person: TestUser;

  beforeAll(async () => {
    server = await startServer({ clock: "manual" });
    person = await createUser(server);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("an agent creates with pair: true, a person claims in the browser, the agent's poll yields a token that owns the app", { timeout: 90_000 }, async () => {
    const created = await server.client.post("/app", {
      module: moduleSource(manifestOf("todo-board", ["list"], { displayName: "Todo board", icon: { emoji: "📋", bg: "#1d4ed8" } })),
      pair: true,
      label: "Claude Code in ~/todo",
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, token, pairing } = created.body;

    // The link an agent hands a person: the token rides in the fragment, which browsers never send.
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    await page.goto(`${server.config.baseUrl}/app/${id}/claim#token=${token}`);
    await page.getByRole("heading", { name: "Sign in" }).or(page.getByText("Sign in to claim this app")).first().waitFor();
    expect(page.url()).toBe(`${server.config.baseUrl}/app/${id}/claim`);
    expect(requested.some((url) => url.includes(token))).toBe(false);
    expect(await page.locator("main").textContent()).toContain("Todo board");
    expect(await page.locator("main").textContent()).toContain("revision 1");
    await browser.screenshot(page, "claim-1-sign-in");

    await page.getByLabel("Email or handle").fill(person.email);
    await page.getByLabel("Password").fill(person.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${server.config.baseUrl}/app/${id}/claim`);
    const claimButton = page.getByRole("button", { name: `Claim “Todo board” as @${person.handle}` });
    await claimButton.waitFor();
    await browser.screenshot(page, "claim-2-confirm");
    await claimButton.click();
    await page.waitForURL(`${server.config.baseUrl}/@${person.handle}/todo-board`);

    (server.clock as ManualClock).advance(5 * SECOND);
    const polled = await server.client.post("/api/pair/poll", { device_code: pairing.device_code });
    expect(polled.body.status).toBe("approved");
    const apps = await server.client.get("/app", { token: polled.body.token });
    expect(apps.body.apps).toEqual([expect.objectContaining({ id, role: "owner", manifestId: "todo-board" })]);
    const revoked = await server.client.get(`/app/${id}/source`, { token });
    expect(revoked.body.error.reason).toBe("token_revoked_post_claim");
  });

  it("refuses a wrong token in the link and leaves the app unclaimed", { timeout: 60_000 }, async () => {
    const created = await server.client.post("/app", { module: moduleSource(manifestOf("other-app")) });
    const other = await server.client.post("/app", { module: moduleSource(manifestOf("another-app")) });
    const page = await browser.newPage();
    await page.goto(`${server.config.baseUrl}/app/${created.body.id}/claim#token=${other.body.token}`);
    await page.getByRole("alert").waitFor({ state: "visible" });
    expect(await page.getByRole("alert").textContent()).toContain("not valid for this app");
    const app = await server.ctx.apps.get(created.body.id);
    expect(app?.ownerUserId).toBeNull();
  });
});
