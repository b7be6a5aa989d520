import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeBrowser, serverAndBrowser } from "./helpers/browser.ts";

const WIDTHS = [1280, 390] as const;

const SHOP = `export const manifest = {
  id: "free-prizes",
  displayName: "Free prizes",
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { claim: { access: "write", input: { type: "object" } }, count: { access: "read", input: { type: "object" } } },
};
export default { async fetch(request, env) {
  if (request.headers.get("x-svc-op") === "claim") await env.KV.set("claims", ((await env.KV.get("claims")) ?? 0) + 1);
  return Response.json({ ok: true, value: (await env.KV.get("claims")) ?? 0 });
} };`;

/** Issue 45 in real Chromium: a visitor reports, an operator suspends and lifts, the audit log shows both. */
describeBrowser("admin: report, suspend, unsuspend in real Chromium", () => {
  const suite = serverAndBrowser();

  async function check(page: Page, name: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 800 });
      await suite.browser.screenshot(page, `admin-${name}-${width}`);
    }
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), name).toEqual([]);
  }

  it("a visitor reports a public app; the operator finds the report, suspends the app, then lifts it; its data is intact and the audit log names the operator", { timeout: 180_000 }, async () => {
    const { server } = suite;
    const owner = await server.ctx.users.create({ email: "prizes@example.test", handle: "prizeowner", password: "a long enough password" });
    const ownerToken = (await server.ctx.tokens.mintUserToken(owner.id, {})).token;
    const made = await server.client.post("/app", { module: SHOP }, { token: ownerToken });
    const appId = made.body.id as string;
    expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "public" }, { token: ownerToken })).status).toBe(200);
    expect((await server.client.post(`/app/${appId}/api/claim`, {}, { token: ownerToken })).body).toEqual({ ok: true, value: 1 });
    const hook = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "claim" }, { token: ownerToken });
    const routine = await server.client.post(`/api/v1/apps/${appId}/routines`, { op: "claim", interval: "hourly" }, { token: ownerToken });
    expect([hook.status, routine.status]).toEqual([201, 201]);
    await server.ctx.users.create({ email: "ops@example.test", handle: "theoperator", password: "a long enough password" });
    await server.ctx.users.setRole("theoperator", "operator");

    // A visitor, not signed in, opens the app and follows its Report link.
    const visitor = await suite.browser.newPage();
    await visitor.goto(`${server.url}/@prizeowner/free-prizes`);
    const report = await visitor.getByRole("link", { name: "Report" }).getAttribute("href");
    expect(report).toBe(`${server.config.baseUrl}/app/${appId}/report`);
    await visitor.goto(report ?? "");
    await check(visitor, "report-form");
    await visitor.getByLabel("Phishing or stealing passwords").check();
    await visitor.getByLabel("Details (optional)").fill("asks for my bank login to claim a prize");
    await visitor.getByRole("button", { name: "Send report" }).click();
    await visitor.getByRole("heading", { name: "Thank you" }).waitFor();

    // The operator signs in and finds it.
    const ops = await suite.browser.newPage();
    await ops.goto(`${server.url}/sign-in?return_to=/admin`);
    await ops.getByLabel("Email or handle").fill("theoperator");
    await ops.getByLabel("Password").fill("a long enough password");
    await ops.getByRole("button", { name: "Sign in" }).click();
    await ops.getByRole("heading", { name: "Abuse reports" }).waitFor();
    expect(await ops.locator("#reports").textContent()).toContain("asks for my bank login to claim a prize");
    await check(ops, "reports");
    await ops.getByRole("link", { name: appId }).click();
    await ops.getByRole("heading", { name: "Free prizes" }).waitFor();
    await check(ops, "app");
    await ops.getByLabel("Reason (the owner sees it)").fill("phishing: asks for bank logins");
    await ops.getByRole("button", { name: "Suspend" }).click();
    await ops.getByRole("button", { name: "Unsuspend" }).waitFor();

    // Suspended: the page says so, the op call is refused with the message, the webhook and the routine do not run.
    const again = await visitor.goto(`${server.url}/@prizeowner/free-prizes`);
    expect(again?.status()).toBe(403);
    await visitor.getByText("This app has been suspended by the operator.").waitFor();
    await check(visitor, "suspended-page");
    const refused = await server.client.post(`/app/${appId}/api/claim`, {}, { token: ownerToken });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ kind: "forbidden", message: "suspended by the operator" });
    expect((await server.client.post(`/api/v1/hooks/${hook.body.webhook.id}`, {}, { token: hook.body.webhook.secret })).status).toBe(403);
    await expect(server.ctx.routines.runNow(owner.id, routine.body.routine.id)).rejects.toMatchObject({ kind: "forbidden", message: "suspended by the operator" });
    expect(await server.ctx.routines.runDue(Date.now() + 2 * 3_600_000)).toBe(0);

    // Lifted: it runs again with its data.
    await ops.getByRole("button", { name: "Unsuspend" }).click();
    await ops.getByRole("button", { name: "Suspend" }).waitFor();
    expect((await server.client.post(`/app/${appId}/api/claim`, {}, { token: ownerToken })).body).toEqual({ ok: true, value: 2 });

    await ops.getByRole("link", { name: "Audit log" }).click();
    await ops.getByRole("heading", { name: "Audit log" }).waitFor();
    const audit = (await ops.locator("#audit").textContent()) ?? "";
    expect(audit).toContain("app.suspend");
    expect(audit).toContain("app.unsuspend");
    expect(audit.match(/@theoperator/g)?.length).toBeGreaterThanOrEqual(2);
    await check(ops, "audit");
    await ops.getByRole("link", { name: "Users" }).click();
    await ops.getByRole("heading", { name: "Users" }).waitFor();
    await check(ops, "users");
  });
});
