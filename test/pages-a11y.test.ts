import { AxeBuilder } from "@axe-core/playwright";
import { expect, it } from "vitest";
import { makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeBrowser, serverAndBrowser } from "./helpers/browser.ts";

/**
 * Issue 19: no page has a serious or critical accessibility violation (axe-core), the pages
 * before the console included: sign-in, sign-up, pairing, claim, the app shell, MCP setup, the guide.
 */
describeBrowser("pages: accessibility", () => {
  const suite = serverAndBrowser();

  it("axe finds no serious or critical violation on any page", { timeout: 120_000 }, async () => {
    const { server, browser } = suite;
    const user = await makeUser(server);
    const made = await server.client.post("/app", { module: moduleSource(manifestOf("a11y-app", ["list"], { displayName: "A11y app" })), ui: "document.getElementById('app').textContent = 'hi';" });
    const signedOut = ["/", "/sign-in", "/sign-up", "/mcp/setup", "/docs/apps", `/app/${made.body.id}/claim`];
    const signedIn = ["/", "/pair", "/account", `/app/${made.body.id}`];
    const page = await browser.newPage();
    const failures: string[] = [];
    const audit = async (path: string) => {
      await page.goto(`${server.url}${path}`);
      const results = await new AxeBuilder({ page }).analyze();
      for (const v of results.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
        failures.push(`${path}: ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
      }
    };
    for (const path of signedOut) await audit(path);
    await browser.context.addCookies([{ name: "svc_session", value: user.cookie.split("=")[1] ?? "", url: server.url }]);
    for (const path of signedIn) await audit(path);
    // The signed-in half really was signed in: the last pages were the person's own.
    await page.goto(`${server.url}/account`);
    expect(await page.getByRole("heading", { name: "Account" }).count()).toBe(1);
    await page.close();
    expect(failures).toEqual([]);
  });
});
