import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (marker: string) => `export const manifest = {
  id: "probe-app",
  routes: { look: { access: "read", input: { type: "object" } }, bump: { access: "write", input: { type: "object" } } },
};
export default { async fetch() { return Response.json({ ok: true, value: ${JSON.stringify(marker)} }); } };
`;

/** The console's domains tab shows what the API's domain list shows, to whom it shows it: those with the owner's rights (DECISIONS §12). */
describe("the console's domains tab", () => {
  let server: TestServer;
  let owner: FixtureUser;
  const people: Record<"collaborator" | "viewer" | "endUser", FixtureUser> = {} as never;
  let appId: string;

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server, "pro");
    for (const k of ["collaborator", "viewer", "endUser"] as const) people[k] = await makeUser(server);
    appId = (await server.client.post("/app", { module: source("v1") }, { token: owner.token })).body.id;
    for (const [k, role] of [["collaborator", "collaborator"], ["viewer", "viewer"], ["endUser", "end-user"]] as const) {
      await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: people[k].handle, role }, { token: owner.token });
      expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: people[k].token })).status).toBe(200);
    }
  });
  afterAll(async () => server.close());

  it("is refused to a viewer and a collaborator as the API list is, and shows the owner the TXT value", async () => {
    const added = await server.client.post(`/api/v1/apps/${appId}/domains`, { hostname: "shop.example.com" }, { token: owner.token });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const value = added.body.domain.verification.value as string;
    // An end-user has no console at all: its pages are not found for them.
    for (const [who, person] of Object.entries(people)) {
      expectError(await server.client.get(`/api/v1/apps/${appId}/domains`, { token: person.token }), 403, "forbidden");
      const page = await server.client.get(`/apps/${appId}/domains`, { cookie: person.cookie, headers: { accept: "text/html" } });
      expect({ who, status: page.status, leaksHost: page.text.includes("shop.example.com"), leaksTxt: page.text.includes(value) }).toEqual({ who, status: who === "endUser" ? 404 : 403, leaksHost: false, leaksTxt: false });
    }
    // Nor is the tab offered to them.
    const overview = await server.client.get(`/apps/${appId}`, { cookie: people.viewer.cookie, headers: { accept: "text/html" } });
    expect({ status: overview.status, offersDomains: overview.text.includes(`/apps/${appId}/domains`) }).toEqual({ status: 200, offersDomains: false });
    const mine = await server.client.get(`/apps/${appId}/domains`, { cookie: owner.cookie, headers: { accept: "text/html" } });
    expect({ status: mine.status, showsTxt: mine.text.includes(value) }).toEqual({ status: 200, showsTxt: true });
  });
});
