import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeBrowser, serverAndBrowser } from "./helpers/browser.ts";
import { mailedLink, VERIFY_LINK } from "./helpers/mail.ts";

// A real 1×1 PNG, for a template's cover.
const PIXEL = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

const WIDTHS = [1280, 390] as const;

const TODO = `export const manifest = {
  id: "todo-board",
  displayName: "Todo board",
  description: "Things to do",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { list: { access: "read" }, add: { access: "write" }, boom: { access: "read" } },
};
export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    if (op === "boom") { console.warn("tipping over, call " + request.headers.get("x-svc-request")); throw new Error("the board fell over"); }
    if (op === "add") { const item = await request.json(); await env.KV.set("last", item); return Response.json({ ok: true, value: item }); }
    return Response.json({ ok: true, value: (await env.KV.get("last")) ?? null });
  },
};
`;

/** Issue 19 (the front door): a new person, in real Chromium, from the landing page to their app. */
describeBrowser("console: the front door in real Chromium", () => {
  const suite = serverAndBrowser();

  /** Screenshots at both widths, and no serious or critical axe violation. */
  async function check(page: Page, name: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 800 });
      await suite.browser.screenshot(page, `console-${name}-${width}`);
    }
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), name).toEqual([]);
  }

  it("signs up, verifies, claims an agent's app, sets a secret, runs a routine, takes a webhook delivery, reads diagnostics, mints and revokes a token", { timeout: 180_000 }, async () => {
    const page = await suite.browser.newPage();
    await page.goto(`${suite.server.url}/`);
    await page.getByRole("heading", { name: "Brickyard" }).waitFor();
    await check(page, "landing");

    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByRole("heading", { name: "Create an account" }).waitFor();
    await check(page, "sign-up");
    await page.getByLabel("Email").fill("new.person@example.test");
    await page.getByLabel("Handle").fill("newperson");
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "Your apps" }).waitFor();
    expect(await page.getByRole("status").textContent()).toContain("Confirm your email");
    await check(page, "dashboard-empty");

    await page.goto(await mailedLink(suite.server, "new.person@example.test", VERIFY_LINK).then((path) => `${suite.server.url}${new URL(path, suite.server.url).pathname}${new URL(path, suite.server.url).search}`));
    await page.goto(`${suite.server.url}/`);
    await page.getByRole("heading", { name: "Your apps" }).waitFor();
    expect(await page.getByRole("status").count()).toBe(0);

    // An agent makes an app and hands the person its claim link.
    const made = await suite.server.client.post("/app", { module: TODO });
    await page.goto(`${suite.server.url}/app/${made.body.id}/claim#token=${made.body.token}`);
    await page.getByRole("button", { name: "Claim “Todo board” as @newperson" }).waitFor();
    await check(page, "claim");
    await page.getByRole("button", { name: "Claim “Todo board” as @newperson" }).click();
    await page.waitForURL((url) => !url.pathname.endsWith("/claim"));
    await suite.server.client.post("/app", { module: moduleSource(manifestOf("other-thing")) }, { token: (await suite.server.ctx.tokens.mintUserToken((await suite.server.ctx.users.byHandle("newperson"))?.id ?? "", {})).token });

    await page.goto(`${suite.server.url}/`);
    await page.getByRole("link", { name: "Todo board" }).waitFor();
    await page.getByRole("link", { name: "other-thing" }).waitFor();
    await check(page, "dashboard");
    await page.getByLabel("Search by name").fill("todo");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByRole("link", { name: "Todo board" }).waitFor();
    expect(await page.getByRole("link", { name: "other-thing" }).count()).toBe(0);
    const html = await page.content();
    expect(html).not.toMatch(/svc_(app|user|render)_[0-9A-Za-z]/);

    await page.getByRole("link", { name: "Todo board" }).click();
    await page.getByRole("heading", { name: "Todo board" }).waitFor();
    expect(await page.locator(".facts").textContent()).toContain("Owner");
    await check(page, "app-overview");

    // Secrets: set one; its name is listed, its value never shown.
    await page.getByRole("link", { name: "Secrets" }).click();
    await page.getByLabel("Name").fill("API_KEY");
    await page.getByLabel("Value").fill("sk-very-secret-value");
    await page.getByRole("button", { name: "Save secret" }).click();
    await page.getByText("API_KEY", { exact: true }).waitFor();
    expect(await page.content()).not.toContain("sk-very-secret-value");
    await check(page, "app-secrets");

    // Routines: create one and run it now.
    await page.getByRole("link", { name: "Routines" }).click();
    await page.getByLabel("Operation").selectOption("list");
    await page.getByLabel("Every").selectOption("daily");
    await page.getByRole("button", { name: "Create routine" }).click();
    await page.getByRole("button", { name: "Run list now" }).click();
    await page.getByText(/last run \d{4}-.*success/).waitFor();
    await check(page, "app-routines");

    // Webhooks: create one (its secret shown once), deliver to it as another service would, see the delivery.
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByLabel("Operation it runs").selectOption("add");
    await page.getByLabel("Name").fill("incoming");
    await page.getByRole("button", { name: "Create webhook" }).click();
    const secret = (await page.locator("#webhook-secret").textContent()) ?? "";
    expect(secret).toMatch(/^svc_hook_/);
    await check(page, "app-webhooks-reveal");
    const hookUrl = (await page.locator(".rows .muted").first().textContent()) ?? "";
    // The copy buttons put exactly the shown text on the clipboard.
    await suite.browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.server.url });
    await page.getByRole("button", { name: /^Copy .*'s URL$/ }).click();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(hookUrl);
    const delivered = await fetch(`${hookUrl}?key=${secret}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "from curl" }) });
    expect(delivered.status).toBe(200);
    await page.getByRole("link", { name: "Webhooks" }).click();
    expect(await page.content()).not.toContain(secret);
    await page.getByRole("link", { name: "incoming" }).click();
    await page.getByText('{"title":"from curl"}').first().waitFor();
    await check(page, "app-webhook-deliveries");
    await page.getByLabel("Name").fill("from the shop");
    await page.getByRole("button", { name: "Rename" }).click();
    await page.getByRole("heading", { name: "from the shop: deliveries" }).waitFor();

    // Diagnostics after a failing op.
    const ownerToken = (await suite.server.ctx.tokens.mintUserToken((await suite.server.ctx.users.byHandle("newperson"))?.id ?? "", {})).token;
    expect((await suite.server.client.post(`/app/${made.body.id}/api/boom`, {}, { token: ownerToken })).status).toBe(500);
    await page.getByRole("link", { name: "Diagnostics" }).click();
    await page.getByText("the board fell over").first().waitFor();
    expect(await page.locator("figcaption").textContent()).toMatch(/^\d+ calls, 1 failed, in the last 7 days; the most, \d+, in the hour from \d{4}-\d\d-\d\dT\d\d:00 UTC\. calls failed$/);
    expect(await page.locator('.chart rect[fill="#b4461f"]').count()).toBe(1);
    await check(page, "app-diagnostics");
    // Live: a failure while the tab is open appears without a reload.
    await page.locator('#diag-list[data-live="on"]').waitFor();
    const shown = await page.locator("#diag-list li").count();
    expect((await suite.server.client.post(`/app/${made.body.id}/api/boom`, {}, { token: ownerToken })).status).toBe(500);
    await page.locator("#diag-list li").nth(shown).waitFor();
    expect(await page.locator("#diag-list li").last().textContent()).toContain("the board fell over");
    // The app's log lines: the newest drawn with the page, the next arriving live, newest first.
    expect(await page.locator("#log-list li").count()).toBeGreaterThanOrEqual(1);
    const logged = await page.locator("#log-list li").count();
    expect((await suite.server.client.post(`/app/${made.body.id}/api/boom`, {}, { token: ownerToken, headers: { "x-request-id": "console-live-1" } })).status).toBe(500);
    await page.locator("#log-list li").nth(logged).waitFor();
    expect(await page.locator("#log-list li").first().textContent()).toContain("warn · boom · console-live-1tipping over, call console-live-1");

    // Account: mint a token (shown once), then revoke it.
    await page.goto(`${suite.server.url}/account`);
    await page.getByLabel("Name").fill("laptop");
    await page.getByRole("button", { name: "Create token" }).click();
    const minted = (await page.locator("#minted-token").textContent()) ?? "";
    // The plan's limits with this person's use: one routine and one webhook made above.
    const limits = (await page.locator("main").textContent()) ?? "";
    expect(limits).toContain("Routines1 of 25 (3 per app)");
    expect(limits).toContain("Webhooks1 of 25 (3 per app)");
    expect(minted).toMatch(/^svc_user_/);
    expect((await suite.server.client.get("/api/me", { token: minted })).status).toBe(200);
    await check(page, "account");
    await page.getByRole("button", { name: "Revoke laptop" }).click();
    await page.getByRole("heading", { name: "Account" }).waitFor();
    expect(await page.content()).not.toContain(minted);
    expect((await suite.server.client.get("/api/me", { token: minted })).status).toBe(401);

    await page.goto(`${suite.server.url}/`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Brickyard" }).waitFor();
    await page.close();
  });

  it("forms refuse cross-origin posts; an app's page is 404 to strangers and sign-in to nobody", async () => {
    for (const path of ["/sign-up", "/sign-out", "/account/tokens", `/apps/${crypto.randomUUID()}/secrets`, `/apps/${crypto.randomUUID()}/webhooks`]) {
      const res = await fetch(`${suite.server.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example", accept: "application/json" },
        body: "email=a%40b.test&handle=abc&password=long+enough+pw",
      });
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as { error: { kind: string } }).error.kind).toBe("forbidden");
    }
    const owner = await suite.server.ctx.users.create({ email: "owner@example.test", handle: "owner1", password: "a long enough password" });
    const ownerToken = (await suite.server.ctx.tokens.mintUserToken(owner.id, {})).token;
    const app = await suite.server.client.post("/app", { module: moduleSource(manifestOf("secret-plans", ["list"], { displayName: "Secret plans" })) }, { token: ownerToken });
    const stranger = await suite.server.ctx.users.create({ email: "stranger@example.test", handle: "stranger1", password: "a long enough password" });
    const cookie = `svc_session=${await suite.server.ctx.sessions.create(stranger.id)}`;
    for (const tab of ["", "/secrets", "/routines", "/webhooks", "/diagnostics"]) {
      const denied = await fetch(`${suite.server.url}/apps/${app.body.id}${tab}`, { headers: { cookie } });
      expect(denied.status, tab).toBe(404);
      expect(await denied.text()).not.toContain("Secret plans");
    }
    const nobody = await fetch(`${suite.server.url}/apps/${app.body.id}`);
    expect(nobody.status).toBe(401);
    const text = await nobody.text();
    expect(text).toContain("Sign in");
    expect(text).not.toContain("Secret plans");
  });

  it("an app's source, operations (run with a form, the envelope shown), visibility and deletion", { timeout: 120_000 }, async () => {
    const owner = await suite.server.ctx.users.create({ email: "ops@example.test", handle: "opsperson", password: "a long enough password" });
    const token = (await suite.server.ctx.tokens.mintUserToken(owner.id, {})).token;
    const created = await suite.server.client.post("/app", { module: TODO }, { token });
    const page = await suite.browser.newPage();
    await page.goto(`${suite.server.url}/sign-in?return_to=/apps/${created.body.id}`);
    await page.getByLabel("Email or handle").fill("opsperson");
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Todo board" }).waitFor();

    await page.getByRole("link", { name: "Source" }).click();
    expect(await page.locator("pre").first().textContent()).toContain('throw new Error("the board fell over")');
    await check(page, "app-source");

    await page.getByRole("link", { name: "Operations" }).click();
    await page.getByLabel("Input (JSON)").nth(1).fill('{"title":"milk"}');
    await page.getByRole("button", { name: "Run add" }).click();
    expect(JSON.parse((await page.locator("#call-result").textContent()) ?? "")).toEqual({ ok: true, value: { title: "milk" } });
    await page.getByRole("button", { name: "Run boom" }).click();
    expect(JSON.parse((await page.locator("#call-result").textContent()) ?? "")).toMatchObject({ ok: false, error: { kind: "operation_failed" } });
    await page.getByLabel("Input (JSON)").first().fill("{not json");
    await page.getByRole("button", { name: "Run list" }).click();
    expect(JSON.parse((await page.locator("#call-result").textContent()) ?? "")).toMatchObject({ ok: false, error: { kind: "invalid_request" } });
    await check(page, "app-operations");

    // Versions: a second revision from the API, then revision 1 restored from the page.
    await suite.server.client.put(`/app/${created.body.id}`, { module: TODO.replace("Things to do", "Things to do, v2") }, { token });
    await page.getByRole("link", { name: "Versions" }).click();
    await page.getByText("Revision 2", { exact: true }).waitFor();
    await check(page, "app-versions");
    await page.getByRole("button", { name: "Restore revision 1" }).click();
    await page.getByText("The app runs revision 3.").waitFor();
    expect((await suite.server.client.get(`/app/${created.body.id}/source`, { token })).body.module).toContain('"Things to do"');

    // Sharing: invite someone by handle, see the pending share, revoke it.
    await suite.server.ctx.users.create({ email: "friend@example.test", handle: "friend1", password: "a long enough password" });
    await page.getByRole("link", { name: "Sharing" }).click();
    await page.getByLabel("Handle or email").fill("friend1");
    await page.getByLabel("Role").selectOption("viewer");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.getByText("viewer · pending").waitFor();
    await check(page, "app-shares");
    await page.getByRole("button", { name: "Revoke friend1" }).click();
    await page.getByText("Nobody yet.").waitFor();

    // Diagnostics, filtered by kind: the failed call is an api_proxy_result, not a diag_report.
    await page.getByRole("link", { name: "Diagnostics" }).click();
    await page.getByLabel("Kind").selectOption("api_proxy_result");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText(/ · api_proxy_result · revision /).first().waitFor();
    await page.getByLabel("Kind").selectOption("diag_report");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("No events.").waitFor();
    await check(page, "app-diagnostics-filtered");

    // Assets (with usage against the quota, and deletion) and the feedback inbox.
    await suite.server.ctx.assets.put(created.body.id, "images/logo.png", "image/png", Buffer.alloc(3 * 1024, 1));
    await suite.server.ctx.feedback.add({ id: created.body.id, revision: 1 }, null, { text: "Love the board <b>a lot</b>" });
    await page.getByRole("link", { name: "Assets" }).click();
    await page.getByText("images/logo.png", { exact: true }).waitFor();
    expect(await page.locator("main").textContent()).toContain("3.0 KiB of 100.0 MiB used");
    await check(page, "app-assets");
    await page.getByRole("button", { name: "Delete images/logo.png" }).click();
    await page.getByText("No assets.").waitFor();
    await page.getByLabel(/^Key/).fill("notes/readme.txt");
    await page.getByLabel(/^File/).setInputFiles({ name: "readme.txt", mimeType: "text/plain", buffer: Buffer.from("hello from the console") });
    await page.getByRole("button", { name: "Upload" }).click();
    await page.getByText("notes/readme.txt", { exact: true }).waitFor();
    expect((await suite.server.ctx.assets.read(created.body.id, "notes/readme.txt"))?.data.toString()).toBe("hello from the console");
    await suite.server.ctx.feedback.add({ id: created.body.id, revision: 1 }, null, { text: "Could it sort?", email: "fan@example.test" });
    await page.getByRole("link", { name: "Feedback" }).click();
    expect(await page.locator("main").textContent()).toContain("Love the board <b>a lot</b>");
    await check(page, "app-feedback");
    // Replies go by mail: to the address left with it; feedback with none has no one to reply to.
    const replies = page.getByLabel("Reply");
    await replies.nth(0).fill("Sorting is coming next week.");
    await page.getByRole("button", { name: "Send reply" }).nth(0).click();
    await page.getByRole("heading", { name: "Feedback" }).waitFor();
    const mailed = await suite.server.ctx.mailer.to("fan@example.test");
    expect(mailed[0]).toMatchObject({ subject: "Re: your feedback on Todo board" });
    expect(mailed[0]?.text).toContain("Sorting is coming next week.");
    expect(mailed[0]?.text).toContain("> Could it sort?");
    await page.getByLabel("Reply").nth(1).fill("Thanks!");
    await page.getByRole("button", { name: "Send reply" }).nth(1).click();
    expect(await page.getByRole("alert").textContent()).toContain("no one to reply to");
    await page.goto(`${suite.server.url}/apps/${created.body.id}`);

    await page.getByRole("link", { name: "Overview" }).click();
    // The add above stored one small value: the data meter counts its bytes.
    expect(await page.locator("main").textContent()).toMatch(/\d+ B of 100\.0 MiB stored \(KV, blobs and snapshots\)/);
    await page.getByLabel("Who may open it").selectOption("public");
    await page.getByRole("button", { name: "Save visibility" }).click();
    expect(await page.locator(".facts").textContent()).toContain("public");
    await page.getByRole("button", { name: "Let people copy it while public" }).click();
    await page.getByRole("button", { name: "Stop letting people copy it" }).waitFor();
    await page.getByLabel(/Starter prompt/).fill("Plan my week with this board.");
    await page.getByRole("button", { name: "Save starter prompt" }).click();
    expect(await page.getByLabel(/Starter prompt/).inputValue()).toBe("Plan my week with this board.");
    const stored = await suite.server.ctx.apps.get(created.body.id);
    expect(stored).toMatchObject({ visibility: "public", remixable: true, starterPrompt: "Plan my week with this board." });
    await check(page, "app-overview-owner");
    // Template: fill the draft, add a cover from the page, publish, then disable.
    await page.getByRole("link", { name: "Template" }).click();
    expect(await page.locator("main").textContent()).toContain("set: title, summary, category, cover");
    await page.getByLabel("Title").fill("Todo board");
    await page.getByLabel("Summary").fill("A board of things to do");
    await page.getByLabel("Category").selectOption("productivity");
    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await page.locator("main").textContent()).toContain("set: cover");
    await page.getByLabel("Kind").selectOption("cover");
    await page.getByLabel(/^Alt text/).fill("The board");
    await page.getByLabel(/^Image/).setInputFiles({ name: "cover.png", mimeType: "image/png", buffer: PIXEL });
    await page.getByRole("button", { name: "Add the image" }).click();
    await page.getByRole("img", { name: "The board" }).waitFor();
    expect(await page.locator("main").textContent()).toContain("Ready to publish.");
    // A file that is not an image is refused with the service's own kind, and nothing is added.
    await page.getByLabel("Kind").selectOption("screenshot");
    await page.getByLabel(/^Alt text/).fill("Not a picture");
    await page.getByLabel(/^Image/).setInputFiles({ name: "notes.png", mimeType: "image/png", buffer: Buffer.from("plain text") });
    await page.getByRole("button", { name: "Add the image" }).click();
    expect(await page.getByRole("alert").textContent()).toMatch(/image/i);
    await page.goBack();
    await page.reload();
    expect(await page.locator(".media img").count()).toBe(1);
    await page.getByRole("button", { name: "Publish as a template" }).click();
    await page.getByText(/Published at revision \d+/).waitFor();
    await check(page, "app-template");
    await page.getByRole("button", { name: "Disable the template" }).click();
    await page.getByRole("button", { name: "Publish as a template" }).waitFor();
    await page.getByRole("button", { name: "Remove the cover" }).click();
    await page.getByText("No cover yet: publishing needs one.").waitFor();
    await page.goto(`${suite.server.url}/apps/${created.body.id}`);

    // A wrong confirmation deletes nothing; the right one does.
    await page.getByLabel("Type the app's manifest id").fill("not-it");
    await page.getByRole("button", { name: "Delete this app" }).click();
    await page.getByRole("alert").waitFor();
    expect((await suite.server.client.get(`/app/${created.body.id}/source`, { token })).status).toBe(200);
    await page.goto(`${suite.server.url}/apps/${created.body.id}`);
    await page.getByLabel("Type the app's manifest id").fill("todo-board");
    await page.getByRole("button", { name: "Delete this app" }).click();
    await page.getByRole("heading", { name: "Your apps" }).waitFor();
    expect((await suite.server.client.get(`/app/${created.body.id}/source`, { token })).status).toBe(404);

    // Teams from the account page: refused on the free plan with the plan's reason, made on pro.
    await page.goto(`${suite.server.url}/account`);
    await page.getByLabel("New team's handle").fill("ops-crew");
    await page.getByRole("button", { name: "Create team" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("teams need the pro plan");
    await suite.server.ctx.users.setPlan("opsperson", "pro");
    await page.goto(`${suite.server.url}/account`);
    await page.getByLabel("New team's handle").fill("ops-crew");
    await page.getByRole("button", { name: "Create team" }).click();
    await page.getByText("@ops-crew · owner").waitFor();
    await check(page, "account-teams");
    await page.close();
  });
});
