import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("apps: UI scripts load CDN code only at exact versions", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  const create = (ui: string) => server.client.post("/app", { module: moduleSource(manifestOf("cdn-ui")), ui });

  it("accepts pinned jsdelivr, unpkg and esm.sh URLs, scoped names and prereleases included", async () => {
    const ui = `import("https://cdn.jsdelivr.net/npm/chart.js@4.4.1/dist/chart.umd.min.js");
import("https://unpkg.com/@scope/pkg@1.0.0/x.js");
import("https://esm.sh/preact@10.19.3");
import("https://esm.sh/htm@3.1.1-beta.2?bundle");`;
    expect((await create(ui)).status).toBe(201);
  });

  it("refuses an unversioned, ranged or tagged URL with 400 unpinned_cdn_script naming it and its line", async () => {
    const cases = [
      "https://esm.sh/react",
      "https://unpkg.com/lodash@4/lodash.js",
      "https://cdn.jsdelivr.net/npm/vue@latest/dist/vue.js",
      "https://cdn.jsdelivr.net/gh/user/repo/file.js",
      "http://unpkg.com/lodash@4.17.21/lodash.js",
    ];
    for (const url of cases) {
      const error = expectError(await create(`// first line\nconst s = document.createElement("script"); s.src = "${url}";`), 400, "unpinned_cdn_script");
      expect(error.details, url).toEqual({ url, line: 2 });
    }
  });
});
