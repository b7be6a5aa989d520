import { expect } from "vitest";
import { makeUser } from "../helpers/apps.ts";
import { itBrowser, serverAndBrowser } from "../helpers/browser.ts";

// An app's own text (error messages, logs) reaches its owner's console: it must stay text there,
// served and live, and a flood of it must not grow the page past the ring.
const MARKUP = `<img src=x onerror="window.__pwned=1"></pre><script>window.__pwned=2</script>`;
const HOSTILE = `export const manifest = { id: "hostile-diag", routes: { boom: { access: "read" }, flood: { access: "read" } }, capabilities: { imports: ["svc:logging/emit@1.0"] } };
export default { async fetch(request, env) {
  if (request.headers.get("x-svc-op") === "flood") {
    for (let i = 0; i < 120; i++) await env.LOG.emit("warn", "flood " + i + ${JSON.stringify(MARKUP)});
    return Response.json({ ok: true, value: null });
  }
  throw new Error(${JSON.stringify(MARKUP)});
} };`;

const suite = serverAndBrowser();

itBrowser("an app's markup in its errors and logs stays text on the diagnostics tab, served and live, and a flood keeps 50 entries", async () => {
  const { server, browser } = suite;
  const user = await makeUser(server);
  const app = await server.client.post("/app", { module: HOSTILE }, { token: user.token });
  expect(app.status).toBe(201);
  expect((await server.client.post(`/app/${app.body.id}/api/boom`, {}, { token: user.token })).status).toBe(500);
  await browser.context.addCookies([{ name: "svc_session", value: user.cookie.split("=")[1] ?? "", url: server.url }]);
  const page = await browser.newPage();
  try {
    await page.goto(`${server.url}/apps/${app.body.id}/diagnostics`);
    await page.locator('#diag-list[data-live="on"]').waitFor();
    expect(await page.locator("#diag-list li").first().textContent()).toContain(MARKUP);
    expect((await server.client.post(`/app/${app.body.id}/api/boom`, {}, { token: user.token })).status).toBe(500);
    await page.locator("#diag-list li").nth(1).waitFor();
    expect(await page.locator("#diag-list li").nth(1).textContent()).toContain(MARKUP);
    expect((await server.client.post(`/app/${app.body.id}/api/flood`, {}, { token: user.token })).status).toBe(200);
    await page.getByText(`flood 119${MARKUP}`).waitFor();
    expect(await page.locator("#diag-list li").count()).toBe(50);
    // Nothing the app wrote became an element or ran.
    expect(await page.locator("#diag-list img, #diag-list script, main script").count()).toBe(0);
    expect(await page.evaluate("typeof window.__pwned")).toBe("undefined");
  } finally {
    await page.close();
  }
});
