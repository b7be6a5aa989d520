import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { PNG, uploadMedia } from "./helpers/templates.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = (marker: string) => `export const manifest = {
  id: "starter-kit",
  displayName: "Starter kit",
  description: "A small app to start from",
  routes: { which: { access: "read" } },
};
export default { async fetch() { return Response.json({ ok: true, value: ${JSON.stringify(marker)} }); } };
`;

/** Issue 16, templates: the listing, its media, publish pinned to a revision, disable, copies and builders. */
describeEachDialect("templates", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let appId: string;
  const url = (path = "") => `/api/v1/apps/${appId}/template-listing${path}`;

  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());
  beforeEach(async () => {
    owner = await makeUser(server);
    appId = (await server.client.post("/app", { module: source("v1") }, { token: owner.token })).body.id;
  });

  async function completeDraft(): Promise<void> {
    expect((await server.client.patch(url(), { title: "Starter", summary: "Start here", category: "productivity" }, { token: owner.token })).status).toBe(200);
    expect((await uploadMedia(server, appId, owner.token, { kind: "cover", alt: "The app's main screen" }, { data: PNG, type: "image/png", name: "cover.png" })).status).toBe(201);
  }

  it("a fresh listing falls back to the app's name and description and says what publishing needs; PATCH changes only what it carries", async () => {
    const fresh = await server.client.get(url(), { token: owner.token });
    expect(fresh.body.listing).toMatchObject({
      appId,
      creator: { handle: owner.handle, builders: 0 },
      draft: { title: null, summary: null, contentMarkdown: null, category: null, cover: null, gallery: [] },
      legacyFallback: true,
      resolved: { title: "Starter kit", summary: "A small app to start from" },
      templateEnabled: false,
      listed: false,
      validation: { complete: false, missingFields: ["title", "summary", "category", "cover"] },
      publicUrl: null,
    });
    await server.client.patch(url(), { title: "Starter" }, { token: owner.token });
    const patched = await server.client.patch(url(), { summary: "Start here" }, { token: owner.token });
    expect(patched.body.listing.draft).toMatchObject({ title: "Starter", summary: "Start here", category: null });
    expect(patched.body.listing).toMatchObject({ legacyFallback: false, templateEnabled: false, validation: { missingFields: ["category", "cover"] } });
    const refused = expectError(await server.client.post(url("/publish"), undefined, { token: owner.token }), 422, "template_listing_incomplete");
    expect(refused.details).toEqual({ missingFields: ["category", "cover"] });
    expectError(await server.client.patch(url(), { category: "games" }, { token: owner.token }), 400, "invalid_request");
    expectError(await server.client.patch(url(), { templateEnabled: true }, { token: owner.token }), 400, "invalid_request");
    // Clearing a field with null or blank puts the fallback back.
    expect((await server.client.patch(url(), { title: "  " }, { token: owner.token })).body.listing.resolved.title).toBe("Starter kit");
  });

  it("media: images only, by their bytes; a new cover replaces the old; screenshots form the gallery", async () => {
    const cases: [Record<string, string>, { data: Buffer; type: string; name: string }][] = [
      [{ kind: "cover", alt: "x" }, { data: Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"), type: "image/svg+xml", name: "x.svg" }],
      [{ kind: "cover", alt: "x" }, { data: Buffer.from("not a png at all"), type: "image/png", name: "x.png" }],
      [{ kind: "cover", alt: "" }, { data: PNG, type: "image/png", name: "x.png" }],
      [{ kind: "poster", alt: "x" }, { data: PNG, type: "image/png", name: "x.png" }],
    ];
    for (const [fields, file] of cases) expectError(await uploadMedia(server, appId, owner.token, fields, file), 400, "template_media_invalid");
    const first = await uploadMedia(server, appId, owner.token, { kind: "cover", alt: "First" }, { data: PNG, type: "image/png", name: "a.png" });
    const second = await uploadMedia(server, appId, owner.token, { kind: "cover", alt: "Second" }, { data: PNG, type: "image/png", name: "b.png" });
    const shot = await uploadMedia(server, appId, owner.token, { kind: "screenshot", alt: "Settings", caption: "The settings" }, { data: PNG, type: "image/png", name: "c.png" });
    expect(shot.body.media).toMatchObject({ kind: "screenshot", alt: "Settings", caption: "The settings", position: 0, url: expect.stringContaining(`/app/${appId}/assets/`) });
    const listing = (await server.client.get(url(), { token: owner.token })).body.listing;
    expect(listing.draft.cover).toMatchObject({ id: second.body.media.id, alt: "Second" });
    expect(listing.draft.gallery).toEqual([expect.objectContaining({ id: shot.body.media.id })]);
    const image = await fetch(listing.draft.cover.url);
    expect(image.status).toBe(200);
    expect(Buffer.from(await image.arrayBuffer())).toEqual(PNG);
    // The replaced cover's bytes are gone with it.
    expect((await server.client.get(`/app/${appId}/assets`, { token: owner.token })).body.assets.map((a: { key: string }) => a.key).sort()).toEqual(
      [second.body.media.assetKey, shot.body.media.assetKey].sort(),
    );
    expect(first.body.media.id).not.toBe(second.body.media.id);
    expect((await server.client.delete(url(`/media/${shot.body.media.id}`), { token: owner.token })).body).toEqual({ ok: true, deleted: true });
    expect((await server.client.delete(url(`/media/${shot.body.media.id}`), { token: owner.token })).body).toEqual({ ok: true, deleted: false });
  });

  it("publish pins the revision; anyone signed in copies it (copyKind template) and counts once as a builder; disable stops it and keeps the draft", async () => {
    await completeDraft();
    const published = await server.client.post(url("/publish"), undefined, { token: owner.token });
    expect(published.body.listing).toMatchObject({ templateEnabled: true, listed: true, publishedRevision: 1, publicUrl: `${server.config.baseUrl}/templates/${appId}` });
    // The app moves on; copies still get the published revision, even once it is past the plan's 20 kept.
    for (let n = 2; n <= 23; n++) await server.client.put(`/app/${appId}`, { module: source(`v${n}`) }, { token: owner.token });
    const publicList = await server.client.get("/api/v1/templates");
    expect(publicList.body.templates.map((t: { appId: string }) => t.appId)).toContain(appId);

    const [ann, ben] = [await makeUser(server), await makeUser(server)];
    for (const user of [ann, ben, ann]) {
      const res = await server.client.post(`/app/${appId}/copy`, { manifest_id: `kit-${Math.random().toString(36).slice(2, 8)}` }, { token: user.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ copyKind: "template", sourceAppId: appId });
      expect(res.body).not.toHaveProperty("secretsNotCopied");
      expect((await server.client.post(`/app/${res.body.id}/api/which`, {}, { token: user.token })).body.value).toBe("v1");
    }
    expectError(await server.client.post(`/app/${appId}/copy`, { include_data: true, manifest_id: "kit-data" }, { token: ann.token }), 403, "copy_data_forbidden");
    expect((await server.client.get(url(), { token: owner.token })).body.listing.creator).toEqual({ handle: owner.handle, builders: 2 });

    const page = await server.client.get(`/templates/${appId}`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.text).toContain("Starter");
    expect(page.text).toContain("2 people have built from it");

    const disabled = await server.client.post(url("/disable"), undefined, { token: owner.token });
    expect(disabled.body.listing).toMatchObject({ templateEnabled: false, listed: false, publicUrl: null, draft: { title: "Starter", summary: "Start here" } });
    expectError(await server.client.post(`/app/${appId}/copy`, { manifest_id: "kit-late" }, { token: ben.token }), 403, "forbidden");
    expect((await server.client.get("/api/v1/templates")).body.templates.map((t: { appId: string }) => t.appId)).not.toContain(appId);
    expect((await server.client.get(`/templates/${appId}`, { headers: { accept: "text/html" } })).status).toBe(404);
  });

  it("only the owner's rights edit a listing: forbidden_template_edit for a collaborator, forbidden for strangers", async () => {
    const [collaborator, stranger] = [await makeUser(server), await makeUser(server)];
    await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: collaborator.handle }, { token: owner.token });
    await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: collaborator.token });
    expectError(await server.client.patch(url(), { title: "Mine now" }, { token: collaborator.token }), 403, "forbidden_template_edit");
    expectError(await server.client.post(url("/publish"), undefined, { token: collaborator.token }), 403, "forbidden_template_edit");
    expectError(await server.client.get(url(), { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.post(url("/disable"), undefined, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.get(url()), 401, "sign_in_required");
    expectError(await uploadMedia(server, appId, stranger.token, { kind: "cover", alt: "x" }, { data: PNG, type: "image/png", name: "x.png" }), 403, "forbidden");
    const anon = await server.client.post("/app", { module: source("anon") });
    expectError(await server.client.get(`/api/v1/apps/${anon.body.id}/template-listing`, { token: anon.body.token }), 401, "unauthorized");
  });
});
