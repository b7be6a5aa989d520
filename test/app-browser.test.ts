import type { Frame, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeBrowser, launchBrowser, type TestBrowser } from "./helpers/browser.ts";
import { startServer, type TestServer } from "./helpers/server.ts";
import { TODO_MODULE, TODO_STYLES, TODO_UI } from "./fixtures/todo-app.ts";

/** The app's frame inside a shell page, once its document has loaded. */
async function appFrame(page: Page): Promise<Frame> {
  const handle = await page.locator("#app-frame").elementHandle();
  const frame = await handle?.contentFrame();
  if (frame == null) throw new Error("the shell has no app frame");
  await frame.waitForLoadState();
  return frame;
}

/** Polls `read` until `accept` holds (bounded: 40 tries, 250 ms apart). */
async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 40 && !accept(value); i++) {
    await new Promise((r) => setTimeout(r, 250));
    value = await read();
  }
  return value;
}

describeBrowser("apps in real Chromium", () => {
  let server: TestServer;
  let browser: TestBrowser;
  let owner: TestUser;
  let todo: { id: string; token: string; url: string };

  beforeAll(async () => {
    server = await startServer();
    browser = await launchBrowser();
    owner = await createUser(server);
    const created = await server.client.post("/app", { module: TODO_MODULE, ui: TODO_UI, styles: TODO_STYLES });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    todo = { id: created.body.id, token: created.body.token, url: created.body.url };
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("runs a to-do app: add through the UI, persist across reloads, live data events in a second page", { timeout: 90_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(todo.url);
    await expect.poll(() => page.title()).toBe("Todo list");
    const frame = await appFrame(page);
    await frame.getByRole("heading", { name: "Todos" }).waitFor();

    const second = await browser.newPage();
    await second.goto(todo.url);
    const secondFrame = await appFrame(second);
    await secondFrame.getByRole("heading", { name: "Todos" }).waitFor();
    // The second page's stream is open before the first page writes.
    await eventually(() => Promise.resolve(server.ctx.live.listenerCount(todo.id)), (n) => n >= 2);

    for (const text of ["Buy bricks", "Mix mortar"]) {
      await frame.getByLabel("New item").fill(text);
      await frame.getByRole("button", { name: "Add" }).click();
      await frame.getByText(text).waitFor();
    }

    // The other page learns of the KV change over SSE and refreshes itself.
    await secondFrame.getByText("Mix mortar").waitFor();
    const events = await secondFrame.evaluate<{ keys: string[] }[]>("window.dataEvents");
    expect(events.length).toBeGreaterThan(0);
    expect(events.flatMap((e) => e.keys)).toContain("items");

    await page.reload();
    const reloaded = await appFrame(page);
    await reloaded.getByText("Buy bricks").waitFor();
    expect(await reloaded.locator("#items li").allTextContents()).toEqual(["Buy bricks", "Mix mortar"]);
    await browser.screenshot(page, "app-shell-todo");
    await second.close();
    await page.close();
  });

  it("window.svc: errors carry the envelope's kind; asset URLs, feedback and load-error reports work", { timeout: 60_000 }, async () => {
    const form = new FormData();
    form.set("key", "notes/hello.txt");
    form.set("file", new Blob(["hello asset"], { type: "text/plain" }), "hello.txt");
    const uploaded = await fetch(`${server.url}/app/${todo.id}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${todo.token}` } });
    expect(uploaded.status).toBe(201);

    const page = await browser.newPage();
    await page.goto(todo.url);
    const frame = await appFrame(page);
    await frame.getByRole("heading", { name: "Todos" }).waitFor();
    const result = await frame.evaluate<Record<string, unknown>>(`(async () => {
      const failure = await svc.call("nope", {}).catch((e) => ({ name: e.name, kind: e.kind, status: e.status }));
      const invalid = await svc.call("add", { text: "" }).catch((e) => e.kind);
      const asset = await fetch(svc.asset("notes/hello.txt")).then((r) => r.text());
      const sent = await svc.feedback("Nice list", { from: "test" });
      const img = document.createElement("img");
      img.src = svc.asset("missing.png");
      document.body.appendChild(img);
      return { failure, invalid, asset, sent: sent.ok };
    })()`);
    expect(result).toEqual({ failure: { name: "SvcError", kind: "unknown_operation", status: 404 }, invalid: "invalid_input", asset: "hello asset", sent: true });
    // The shell's own feedback form, outside the frame.
    await page.getByText("Feedback", { exact: true }).click();
    await page.getByLabel("Tell the owner what you think").fill("From the shell");
    await page.getByRole("button", { name: "Send feedback" }).click();
    await page.getByRole("status").filter({ hasText: "Thanks, sent." }).waitFor();
    const feedback = await server.client.get(`/app/${todo.id}/feedback`, { token: todo.token });
    expect(feedback.body.feedback.map((f: { text: string }) => f.text).sort()).toEqual(["From the shell", "Nice list"]);
    expect(feedback.body.feedback).toContainEqual(expect.objectContaining({ text: "Nice list", structuredData: { from: "test" } }));
    const diag = await eventually(
      () => server.client.get(`/app/${todo.id}/diag`, { token: todo.token }),
      (res) => JSON.stringify(res.body).includes("[load-error]"),
    );
    const entry = diag.body.value.entries.find((e: { message: string }) => e.message.startsWith("[load-error]"));
    expect(entry.message).toContain("/assets/missing.png");
    expect(entry.message).not.toContain("svc_render_");
    await page.close();
  });

  it("a UI error reaches GET /app/{id}/diag and a diag_report activity event", { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(todo.url);
    const frame = await appFrame(page);
    await frame.getByRole("button", { name: "Break" }).click();

    const diag = await eventually(
      () => server.client.get(`/app/${todo.id}/diag`, { token: todo.token }),
      (res) => JSON.stringify(res.body).includes("boom from the todo UI"),
    );
    expect(diag.status).toBe(200);
    const entry = diag.body.value.entries.find((e: { message: string }) => e.message.includes("boom from the todo UI"));
    expect(entry.stack).toContain("boom from the todo UI");
    const activity = await server.client.get(`/app/${todo.id}/activity?kinds=diag_report`, { token: todo.token });
    expect(activity.status).toBe(200);
    expect(activity.body.value.items.some((e: { summary: string }) => e.summary.includes("boom from the todo UI"))).toBe(true);
    await page.close();
  });

  it("blocks an inline script without the nonce and reports the violation", { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(todo.url);
    const frame = await appFrame(page);
    await frame.getByRole("button", { name: "Inject" }).click();
    const diag = await eventually(
      () => server.client.get(`/app/${todo.id}/diag`, { token: todo.token }),
      (res) => JSON.stringify(res.body).includes("CSP blocked"),
    );
    const entry = diag.body.value.entries.find((e: { message: string }) => e.message.startsWith("CSP blocked"));
    expect(entry?.message).toContain("script-src");
    expect(await frame.evaluate("window.injected === undefined")).toBe(true);
    const activity = await server.client.get(`/app/${todo.id}/activity?kinds=diag_report`, { token: todo.token });
    expect(activity.body.value.items.some((e: { data: { type?: string } }) => e.data.type === "csp")).toBe(true);
    await page.close();
  });

  it("the frame can read neither the shell's cookies nor use them on the control plane", { timeout: 60_000 }, async () => {
    // The owner, signed in, opens their own claimed app.
    const created = await server.client.post("/app", { module: TODO_MODULE, ui: TODO_UI }, { token: owner.token });
    expect(created.status).toBe(201);
    const [name, value] = owner.cookie.split("=");
    await browser.context.addCookies([{ name: name ?? "", value: value ?? "", url: server.config.baseUrl }]);
    const page = await browser.newPage();
    await page.goto(created.body.url);
    const frame = await appFrame(page);
    await frame.getByRole("heading", { name: "Todos" }).waitFor();
    const tokensBefore = (await server.client.get("/api/token", { token: owner.token })).body.tokens.length;

    const probe = await frame.evaluate<Record<string, string>>(`(async (base) => {
      const out = {};
      try { out.cookie = document.cookie; } catch (e) { out.cookie = "blocked: " + e.name; }
      try { out.parent = parent.document.cookie; } catch (e) { out.parent = "blocked: " + e.name; }
      out.origin = self.origin;
      const attempt = async (path, init) => {
        try { const res = await fetch(base + path, { credentials: "include", ...init }); return "status " + res.status; }
        catch (e) { return "failed: " + e.name; }
      };
      out.me = await attempt("/api/me");
      out.mint = await attempt("/api/token", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      out.apps = await attempt("/app");
      return out;
    })(${JSON.stringify(server.config.baseUrl)})`);

    expect(probe.cookie).toBe("blocked: SecurityError");
    expect(probe.parent).toBe("blocked: SecurityError");
    expect(probe.origin).toBe("null");
    // Control-plane routes send no CORS headers, so the opaque origin cannot read them at all.
    expect(probe.me).toBe("failed: TypeError");
    expect(probe.apps).toBe("failed: TypeError");
    expect(probe.mint).toBe("failed: TypeError");
    // And the POST had no effect: the cookie was not sent, or the Origin rule refused it.
    expect((await server.client.get("/api/token", { token: owner.token })).body.tokens.length).toBe(tokensBefore);
    // The SDK's own calls work: render token in the header, no cookies.
    await frame.getByLabel("New item").fill("Owner item");
    await frame.getByRole("button", { name: "Add" }).click();
    await frame.getByText("Owner item").waitFor();
    await browser.screenshot(page, "app-shell-owner");
    await page.close();
    await browser.context.clearCookies();
  });

  it("generates an operations page for an app without ui", { timeout: 60_000 }, async () => {
    const created = await server.client.post("/app", {
      module: moduleSource(
        manifestOf("ops-only", [], {
          displayName: "Ops only",
          routes: {
            greet: {
              title: "Greet someone",
              access: "read",
              input: { type: "object", properties: { name: { type: "string" }, loud: { type: "boolean" } }, required: ["name"] },
            },
            ping: { title: "Ping", access: "read" },
          },
        }),
      ),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const page = await browser.newPage();
    await page.goto(created.body.url);
    const frame = await appFrame(page);
    await frame.getByRole("heading", { name: "Greet someone" }).waitFor();
    await frame.getByLabel("name *").fill("Ada");
    await frame.getByRole("button", { name: "Run greet" }).click();
    await expect.poll(() => frame.locator("form[data-op=greet] + pre").textContent()).toContain('"op": "greet"');
    await browser.screenshot(page, "app-shell-generated-ops");
    await page.close();
  });
});
