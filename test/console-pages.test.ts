import { afterAll, beforeAll, expect, it } from "vitest";
import { makeUser, manifestOf, moduleSource, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const page = (server: TestServer, path: string, cookie: string) => fetch(`${server.url}${path}`, { headers: { cookie, accept: "text/html" } }).then(async (res) => ({ status: res.status, text: await res.text() }));

/** The dashboard's pages and search over the store (both dialects), as plain HTTP. */
describeEachDialect("console: dashboard pages and search", (dialect) => {
  let server: TestServer;
  let user: FixtureUser;
  beforeAll(async () => {
    server = await startServer({ dialect });
    user = await makeUser(server);
    // 27 apps: one page of 25 and a second of 2, newest first.
    for (let i = 0; i < 27; i++) {
      const id = `app-${String(i).padStart(2, "0")}`;
      await server.client.post("/app", { module: moduleSource(manifestOf(id, ["x"], { displayName: i === 5 ? "Gr%_cery list" : `App ${i}` })) }, { token: user.token });
    }
  });
  afterAll(async () => server.close());

  it("lists 25 apps a page, newest first, with a link to the older ones that holds the rest", async () => {
    const first = await page(server, "/", user.cookie);
    expect(first.status).toBe(200);
    const names = (text: string) => [...text.matchAll(/<a href="\/apps\/[0-9a-f-]+">([^<]+)<\/a>/g)].map((m) => m[1]);
    expect(names(first.text)).toHaveLength(25);
    expect(names(first.text)[0]).toBe("App 26");
    const older = /<a href="(\/\?cursor=[^"]+)">Older apps<\/a>/.exec(first.text)?.[1];
    expect(older).toBeDefined();
    const second = await page(server, (older ?? "").replace(/&amp;/g, "&"), user.cookie);
    expect(names(second.text)).toEqual(["App 1", "App 0"]);
    expect(second.text).not.toContain("Older apps");
  });

  it("searches names and manifest ids, with LIKE's wildcards taken literally", async () => {
    const byName = await page(server, `/?q=${encodeURIComponent("gr%_c")}`, user.cookie);
    expect(byName.text).toContain("Gr%_cery list");
    expect(byName.text).not.toContain("App 26");
    // `%` alone matches only names holding a `%`, not everything.
    const percent = await page(server, `/?q=${encodeURIComponent("%")}`, user.cookie);
    expect(percent.text.match(/<a href="\/apps\//g)).toHaveLength(1);
    const byId = await page(server, "/?q=app-1", user.cookie);
    // app-10 … app-19 (ids are zero-padded: app-01 does not match).
    expect(byId.text.match(/<a href="\/apps\//g)).toHaveLength(10);
    const none = await page(server, "/?q=zzz", user.cookie);
    expect(none.text).toContain("No app matches “zzz”.");
  });

  it("the diagnostics chart counts failed calls per hour from the store", async () => {
    const module = `export const manifest = { id: "faulty", routes: { boom: { access: "read" } } };
export default { async fetch() { throw new Error("faulty on purpose"); } };`;
    const app = await server.client.post("/app", { module }, { token: user.token });
    for (let i = 0; i < 3; i++) expect((await server.client.post(`/app/${app.body.id}/api/boom`, {}, { token: user.token })).status).toBe(500);
    const diagnostics = await page(server, `/apps/${app.body.id}/diagnostics`, user.cookie);
    expect(diagnostics.status).toBe(200);
    expect(diagnostics.text).toMatch(/<figcaption>3 failed calls in the last 7 days; the most, 3, in the hour from/);
    expect(diagnostics.text.match(/<rect /g)).toHaveLength(1);
  });
});
