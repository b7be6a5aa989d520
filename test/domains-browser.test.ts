import type { Frame, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { CHROMIUM_PATH, describeBrowser, launchBrowser, type TestBrowser } from "./helpers/browser.ts";
import { startDns, type TestDns } from "./helpers/dns-server.ts";
import { makePro, makePublic, serveAt } from "./helpers/domains.ts";
import { COUNTER_UI, counterModule } from "./fixtures/counter-app.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

async function frameOf(page: Page): Promise<Frame> {
  const handle = await page.locator("#app-frame").elementHandle();
  const frame = await handle?.contentFrame();
  if (frame == null) throw new Error("no app frame");
  await frame.waitForLoadState();
  return frame;
}

/** What the frame's output shows once it is a number. */
async function count(frame: Frame): Promise<string> {
  const out = frame.locator("#n");
  await out.filter({ hasText: /^\d+$/ }).waitFor();
  return (await out.textContent()) ?? "";
}

/**
 * DECISIONS §12 in real Chromium: the app's page on its own domain (the names resolved to
 * loopback by Chromium's host rules), its UI calling ops from the sandboxed frame with the
 * visitor's pass, each visitor seeing their own data, and the owner, signed in on the main origin,
 * the owner's; a private app's domain sending the person to sign in there and back.
 */
describeBrowser("custom domains in Chromium: a visitor's own data, the owner's on the main origin", () => {
  let server: TestServer;
  let dns: TestDns;
  let browser: TestBrowser;
  let owner: TestUser;
  let domainUrl: string;
  let closedUrl: string;

  beforeAll(async () => {
    dns = await startDns();
    server = await startServer({ env: { DNS_RESOLVER: dns.address } });
    owner = await createUser(server);
    await makePro(server, owner.id);
    const appId = (await server.client.post("/app", { module: counterModule("visits", "Visits"), ui: COUNTER_UI }, { token: owner.token })).body.id as string;
    await makePublic(server, owner.token, appId);
    for (let i = 0; i < 5; i++) await server.client.post(`/app/${appId}/api/bump`, {}, { token: owner.token });
    await serveAt(server, dns, owner.token, appId, "visits.example.test");
    domainUrl = `http://visits.example.test:${new URL(server.url).port}/`;
    // A private app on a domain of its own: only its owner may open it.
    const closedId = (await server.client.post("/app", { module: counterModule("closed", "Closed"), ui: COUNTER_UI }, { token: owner.token })).body.id as string;
    for (let i = 0; i < 3; i++) await server.client.post(`/app/${closedId}/api/bump`, {}, { token: owner.token });
    await serveAt(server, dns, owner.token, closedId, "closed.example.test");
    closedUrl = `http://closed.example.test:${new URL(server.url).port}/`;
    if (CHROMIUM_PATH !== null) browser = await launchBrowser(["--host-resolver-rules=MAP *.example.test 127.0.0.1"]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await dns?.close();
  });

  it("a visitor's UI loads on the domain, bumps their own count and finds it on return; a second visitor starts at 0; the owner sees 5", { timeout: 120_000 }, async () => {
    const visitor = await browser.newPage();
    await visitor.goto(domainUrl);
    expect(new URL(visitor.url()).host).toBe(new URL(domainUrl).host);
    let frame = await frameOf(visitor);
    expect(await count(frame)).toBe("0");
    await frame.getByRole("button", { name: "Bump" }).click();
    await frame.locator("#n").filter({ hasText: /^1$/ }).waitFor();
    await frame.getByRole("button", { name: "Bump" }).click();
    await frame.locator("#n").filter({ hasText: /^2$/ }).waitFor();
    await browser.screenshot(visitor, "custom-domain-visitor");
    // Back later, with the domain's cookie: the same store.
    await visitor.reload();
    frame = await frameOf(visitor);
    expect(await count(frame)).toBe("2");

    // Another visitor: a browser without the first one's cookie.
    await browser.context.clearCookies();
    await visitor.goto(domainUrl);
    expect(await count(await frameOf(visitor))).toBe("0");

    // The owner signs in on the main origin and opens the app there: the owner's store.
    const ownerPage = await browser.newPage();
    await ownerPage.goto(`${server.url}/sign-in?return_to=/@${owner.handle}/visits`);
    await ownerPage.getByLabel("Email or handle").fill(owner.handle);
    await ownerPage.getByLabel("Password").fill(owner.password);
    await ownerPage.getByRole("button", { name: "Sign in" }).click();
    await ownerPage.waitForURL(`**/@${owner.handle}/visits`);
    expect(await count(await frameOf(ownerPage))).toBe("5");
  });

  it("a private app's domain sends the person to sign in on the main host and back, signed in: the owner's count", { timeout: 120_000 }, async () => {
    await browser.context.clearCookies();
    const page = await browser.newPage();
    await page.goto(closedUrl);
    await page.getByRole("link", { name: /^Sign in on / }).click();
    await page.waitForURL((url) => url.origin === server.url && url.pathname === "/sign-in");
    await page.getByLabel("Email or handle").fill(owner.handle);
    await page.getByLabel("Password").fill(owner.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    // Back on the domain at its own address: the token went into the domain's cookie on the way.
    await page.waitForURL(closedUrl);
    expect(await count(await frameOf(page))).toBe("3");
    await page.reload();
    expect(await count(await frameOf(page))).toBe("3");
  });
});
