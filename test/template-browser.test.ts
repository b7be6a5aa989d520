import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeBrowser, launchBrowser, type TestBrowser } from "./helpers/browser.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { uploadMedia } from "./helpers/templates.ts";

const MODULE = `export const manifest = { id: "habit-tracker", displayName: "Habit tracker", description: "Track a habit a day", routes: { today: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "today" }); } };
`;

// A real 1×1 PNG, so the browser decodes the cover.
const PIXEL = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

/** Issue 16: a template published by its owner, found on its public page and used by someone else. */
describeBrowser("templates in real Chromium", () => {
  let server: TestServer;
  let browser: TestBrowser;
  let owner: FixtureUser;
  let builder: TestUser;

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
    builder = await createUser(server);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("the owner publishes; another person opens the public page, signs in, uses the template and lands on their copy", { timeout: 90_000 }, async () => {
    const appId = (await server.client.post("/app", { module: MODULE }, { token: owner.token })).body.id as string;
    const listing = `/api/v1/apps/${appId}/template-listing`;
    await server.client.patch(listing, { title: "Habit tracker", summary: "One habit, one tick a day", category: "lifestyle", contentMarkdown: "Pick a habit.\n\nTick it <b>daily</b>." }, { token: owner.token });
    expect((await uploadMedia(server, appId, owner.token, { kind: "cover", alt: "A week of ticks" }, { data: PIXEL, type: "image/png", name: "cover.png" })).status).toBe(201);
    const published = await server.client.post(`${listing}/publish`, undefined, { token: owner.token });
    expect(published.body.listing.publicUrl).toBe(`${server.config.baseUrl}/templates/${appId}`);

    const page = await browser.newPage();
    await page.goto(published.body.listing.publicUrl as string);
    await page.getByRole("heading", { name: "Habit tracker" }).waitFor();
    const cover = page.getByRole("img", { name: "A week of ticks" });
    await cover.waitFor();
    // Decoded, not a broken image: the tests' TypeScript has no DOM types, hence the shape.
    expect(await cover.evaluate((img) => ((img as unknown as { complete: boolean }).complete ? (img as unknown as { naturalWidth: number }).naturalWidth : 0))).toBe(1);
    // The description is text: the markup in it is shown, not obeyed.
    expect(await page.locator("main").textContent()).toContain("Tick it <b>daily</b>.");
    await browser.screenshot(page, "template-1-public-page");

    await page.getByRole("link", { name: "Sign in to use this template" }).click();
    await page.getByLabel("Email or handle").fill(builder.handle);
    await page.getByLabel("Password").fill(builder.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Use this template" }).waitFor();
    await browser.screenshot(page, "template-2-signed-in");
    await page.getByRole("button", { name: "Use this template" }).click();

    await page.waitForURL(`${server.config.baseUrl}/@${builder.handle}/habit-tracker`);
    await page.locator("iframe").first().waitFor();
    await browser.screenshot(page, "template-3-copy");
    const mine = await server.client.get("/app", { token: builder.token });
    expect(mine.body.apps).toEqual([expect.objectContaining({ manifestId: "habit-tracker", role: "owner" })]);
    expect((await server.client.get(listing, { token: owner.token })).body.listing.creator.builders).toBe(1);
  });
});
