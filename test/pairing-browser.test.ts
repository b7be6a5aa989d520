import { afterAll, beforeAll, expect, it } from "vitest";
import { SECOND } from "../src/config/clock.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { describeBrowser, launchBrowser, type TestBrowser } from "./helpers/browser.ts";
import { manualClock, poll, startPairing } from "./helpers/pairing.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeBrowser("device pairing in real Chromium", () => {
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

  it("a person signs in, compares the code, approves; the polling agent receives a working paired token", { timeout: 60_000 }, async () => {
    const agent = await startPairing(server, "Claude Code in ~/projects/todo");
    manualClock(server).advance(5 * SECOND);
    expect((await poll(server, agent.device_code)).body.status).toBe("pending");

    const page = await browser.newPage();
    await page.goto(agent.verification_url);
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign in");
    await browser.screenshot(page, "pair-1-sign-in");
    await page.getByLabel("Email or handle").fill(person.email);
    await page.getByLabel("Password").fill(person.password);
    await page.getByRole("button", { name: "Sign in" }).click();

    await page.waitForURL(`${server.config.baseUrl}/pair`);
    await browser.screenshot(page, "pair-2-enter-code");
    // Typed the way people type: lower case, a space for the dash.
    await page.getByLabel("Code").fill(agent.user_code.toLowerCase().replace("-", " "));
    await page.getByRole("button", { name: "Continue" }).click();

    await page.waitForURL(/\/pair\?code=/);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Approve access?");
    expect(await page.locator("main").textContent()).toContain("Claude Code in ~/projects/todo");
    // The code on the page is the code the agent shows.
    expect(await page.locator(".code").textContent()).toBe(agent.user_code);
    const approveButton = page.getByRole("button", { name: "Approve" });
    const denyButton = page.getByRole("button", { name: "Deny" });
    const [a, d] = [await approveButton.boundingBox(), await denyButton.boundingBox()];
    // Side by side and equally prominent: same row, same size.
    expect(a && d && { sameRow: a.y === d.y, sameSize: a.width === d.width && a.height === d.height, approveFirst: a.x < d.x }).toEqual({
      sameRow: true,
      sameSize: true,
      approveFirst: true,
    });
    await browser.screenshot(page, "pair-3-confirm");
    // Seeing the code approves nothing.
    manualClock(server).advance(5 * SECOND);
    expect((await poll(server, agent.device_code)).body.status).toBe("pending");

    await approveButton.click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Access approved");
    await browser.screenshot(page, "pair-4-approved");

    manualClock(server).advance(5 * SECOND);
    const got = await poll(server, agent.device_code);
    expect(got.body.status).toBe("approved");
    const me = await server.client.get("/api/me", { token: got.body.token });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(person.id);
    const tokens = await server.client.get("/api/token", { token: got.body.token });
    expect(tokens.body.tokens).toContainEqual(expect.objectContaining({ name: "Claude Code in ~/projects/todo", source: "paired" }));
    await page.close();
  });

  it("the complete verification URL pre-fills the code but waits for a click; Deny works", { timeout: 60_000 }, async () => {
    const agent = await startPairing(server, "an agent I do not recognise");
    const page = await browser.newPage();
    await page.goto(agent.verification_url_complete);
    expect(await page.locator(".code").textContent()).toBe(agent.user_code);
    manualClock(server).advance(5 * SECOND);
    expect((await poll(server, agent.device_code)).body.status).toBe("pending");

    await page.getByRole("button", { name: "Deny" }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Access denied");
    await browser.screenshot(page, "pair-5-denied");
    manualClock(server).advance(5 * SECOND);
    expect((await poll(server, agent.device_code)).body.status).toBe("denied");

    await page.goto(`${server.config.baseUrl}/pair?code=SVC-ZZZZZZ`);
    expect(await page.getByRole("alert").textContent()).toContain("no pairing has that code");
    await browser.screenshot(page, "pair-6-unknown-code");
    await page.close();
  });
});
