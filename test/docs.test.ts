import { describe, expect, it } from "vitest";
import { itBrowser, serverAndBrowser } from "./helpers/browser.ts";

interface Example {
  kind: "example" | "call" | "ui" | "logs";
  name: string;
  text: string;
}

/** The code blocks of the served guide, in order, by their data attributes. */
function examplesOf(page: string): Example[] {
  const found: Example[] = [];
  const unescape = (text: string) => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");
  for (const match of page.matchAll(/<code class="language-[a-z]*" data-(example|call|ui|logs)="([A-Za-z0-9_-]+)">([\s\S]*?)<\/code>/g)) {
    found.push({ kind: match[1] as Example["kind"], name: match[2] ?? "", text: unescape(match[3] ?? "") });
  }
  return found;
}

/**
 * Issue 18: the authoring guide cannot rot. The test reads /llms.txt as an agent would, follows
 * it to /docs/apps, deploys every example there (with its UI when it has one) and makes every
 * call the guide shows, expecting exactly the answer it shows.
 */
describe("docs: /llms.txt → /docs/apps, every example deployed and called", () => {
  const suite = serverAndBrowser();
  /** The UI examples the first test deployed, for the browser to open. */
  let uiExamples: { name: string; id: string }[] = [];

  it("every example in the guide deploys and answers as the guide says", { timeout: 60_000 }, async () => {
    const index = await suite.server.client.get("/llms.txt");
    expect(index.headers.get("content-type")).toContain("text/plain");
    const guideUrl = /\[Writing apps\]\((\S+)\)/.exec(index.text)?.[1];
    expect(guideUrl).toBe(`${suite.server.config.baseUrl}/docs/apps`);
    const guide = await suite.server.client.get(new URL(guideUrl ?? "").pathname);
    expect(guide.status).toBe(200);
    const examples = examplesOf(guide.text);
    const modules = examples.filter((e) => e.kind === "example");
    const calls = examples.filter((e) => e.kind === "call");
    expect(modules.length).toBeGreaterThanOrEqual(4);
    expect(calls.length).toBeGreaterThanOrEqual(8);
    const deployed = new Map<string, { id: string; token: string }>();
    for (const example of modules) {
      const ui = examples.find((e) => e.kind === "ui" && e.name === example.name)?.text;
      const res = await suite.server.client.post("/app", { module: example.text, ...(ui === undefined ? {} : { ui }) });
      expect(res.status, `${example.name}: ${JSON.stringify(res.body)}`).toBe(201);
      expect(res.body.warnings, example.name).toBeUndefined();
      deployed.set(example.name, { id: res.body.id, token: res.body.token });
    }
    for (const call of calls) {
      const app = deployed.get(call.name);
      expect(app, `a call to ${call.name}, which the guide never defines`).toBeDefined();
      const { op, input, expect: expected } = JSON.parse(call.text) as { op: string; input: unknown; expect: Record<string, unknown> };
      const res = await suite.server.client.post(`/app/${app?.id}/api/${op}`, input, { token: app?.token });
      expect(res.body, `${call.name}.${op}(${JSON.stringify(input)})`).toMatchObject(expected);
    }
    // The log lines an example printed, read back as the guide says.
    const reads = examples.filter((e) => e.kind === "logs");
    expect(reads.length).toBeGreaterThanOrEqual(1);
    for (const read of reads) {
      const app = deployed.get(read.name);
      const { query, expect: expected } = JSON.parse(read.text) as { query: string; expect: unknown[] };
      const res = await suite.server.client.get(`/app/${app?.id}/logs${query}`, { token: app?.token });
      expect(res.body, `${read.name} logs${query}`).toMatchObject({ ok: true, lines: expected });
    }
    uiExamples = examples.filter((e) => e.kind === "ui").map((ui) => ({ name: ui.name, id: deployed.get(ui.name)?.id ?? "" }));
    expect(uiExamples.length).toBeGreaterThan(0);
  });

  itBrowser("every UI example runs in a real page and its button reaches the backend", { timeout: 60_000 }, async () => {
    expect(uiExamples.length, "the examples were deployed by the test before").toBeGreaterThan(0);
    for (const ui of uiExamples) {
      const page = await suite.browser.newPage();
      await page.goto(`${suite.server.config.baseUrl}/app/${ui.id}`);
      const frame = page.frameLocator("iframe");
      await frame.getByRole("button", { name: "Greet" }).click();
      await frame.getByText("Hi page").waitFor();
      await page.close();
    }
  });

  itBrowser("the guide is readable in a browser", { timeout: 30_000 }, async () => {
    const page = await suite.browser.newPage();
    await page.goto(`${suite.server.url}/docs/apps`);
    await page.getByRole("heading", { name: "Writing apps for Brickyard" }).waitFor();
    await page.getByRole("heading", { name: "Storing data" }).waitFor();
    await suite.browser.screenshot(page, "docs-apps");
    await page.close();
  });
});
