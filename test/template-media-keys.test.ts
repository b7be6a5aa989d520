import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { PNG, uploadMedia } from "./helpers/templates.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const source = `export const manifest = {
  id: "starter-kit",
  displayName: "Starter kit",
  description: "A small app to start from",
  routes: { which: { access: "read" } },
};
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };
`;

async function uploadAsset(server: TestServer, appId: string, token: string, key: string, data: Buffer, type: string) {
  const form = new FormData();
  form.set("key", key);
  form.set("file", new Blob([data], { type }), "x.bin");
  const res = await fetch(`${server.url}/app/${appId}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, body: (text === "" ? null : JSON.parse(text)) as { error?: { kind: string } } | null, text };
}

/**
 * Template media live among the app's assets (template-media/<id>.<ext>), and change only through
 * the listing, which needs `app:template-edit` (owner or team admin; images only). Through the
 * plain asset routes a collaborator replaced or removed the published template's cover; those
 * routes now refuse the listing's keys (assets.ts checkUploadKey) to everyone, the owner too.
 */
describe("template media through the asset routes", () => {
  let server: TestServer;
  let owner: FixtureUser;
  let collaborator: FixtureUser;
  let appId: string;
  let coverKey: string;
  const url = (path = "") => `/api/v1/apps/${appId}/template-listing${path}`;

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
    collaborator = await makeUser(server);
    appId = (await server.client.post("/app", { module: source }, { token: owner.token })).body.id;
    await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: collaborator.handle, role: "collaborator" }, { token: owner.token });
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, undefined, { token: collaborator.token })).status).toBe(200);
    expect((await server.client.patch(url(), { title: "Starter", summary: "Start here", category: "productivity" }, { token: owner.token })).status).toBe(200);
    const cover = await uploadMedia(server, appId, owner.token, { kind: "cover", alt: "Main screen" }, { data: PNG, type: "image/png", name: "cover.png" });
    expect(cover.status).toBe(201);
    coverKey = cover.body.media.assetKey as string;
    expect((await server.client.post(url("/publish"), undefined, { token: owner.token })).status).toBe(200);
  });
  afterAll(async () => server.close());

  it("the collaborator may not touch the listing's media through the listing routes (baseline)", async () => {
    expectError(await uploadMedia(server, appId, collaborator.token, { kind: "cover", alt: "x" }, { data: PNG, type: "image/png", name: "x.png" }), 403, "forbidden_template_edit");
  });

  it("a collaborator cannot replace the published template's cover through POST /app/{id}/assets", async () => {
    for (const who of [collaborator, owner]) {
      const replaced = await uploadAsset(server, appId, who.token, coverKey, Buffer.from("defaced, and not even an image"), "text/plain");
      expect({ status: replaced.status, kind: replaced.body?.error?.kind }).toEqual({ status: 400, kind: "asset_invalid_key" });
    }
  });

  it("a collaborator cannot delete the published template's cover through DELETE /app/{id}/assets/{key}", async () => {
    expectError(await server.client.delete(`/app/${appId}/assets/${coverKey}`, { token: collaborator.token }), 400, "asset_invalid_key");
    // The cover is still the owner's image.
    const cover = await fetch(`${server.url}/app/${appId}/assets/${coverKey}`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect({ status: cover.status, type: cover.headers.get("content-type") }).toEqual({ status: 200, type: "image/png" });
  });

  it("a copy with data takes the app's own assets, not the listing's media, which nothing in the copy could remove", async () => {
    expect((await uploadAsset(server, appId, owner.token, "logo.txt", Buffer.from("own"), "text/plain")).status).toBe(201);
    const made = await server.client.post(`/app/${appId}/copy`, { manifest_id: "starter-copy", include_data: true }, { token: owner.token });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const copied = (await server.client.get(`/app/${made.body.id}/assets`, { token: owner.token })).body.assets as { key: string }[];
    expect(copied.map((a) => a.key)).toEqual(["logo.txt"]);
  });
});
