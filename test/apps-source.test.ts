import { afterAll, beforeAll, expect, it } from "vitest";
import { createAnonymousApp, expectError, makeUser, manifestOf, moduleSource } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("apps: source reads, PUT and PATCH", (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ dialect });
  });
  afterAll(async () => server.close());

  const patch = (id: string, token: string, body: unknown, ifMatch?: string) =>
    server.client.patch(`/app/${id}/source`, body, { token, headers: ifMatch === undefined ? {} : { "if-match": ifMatch } });

  it("GET source answers {ok,id,revision,module,ui,styles} with ETag \"N\"", async () => {
    const module = moduleSource(manifestOf("src-read"));
    const res = await server.client.post("/app", { module, ui: "u()", styles: "b{}" });
    const source = await server.client.get(`/app/${res.body.id}/source`, { token: res.body.token });
    expect(source.status).toBe(200);
    expect(source.headers.get("etag")).toBe('"1"');
    expect(source.body).toEqual({ ok: true, id: res.body.id, revision: 1, module, ui: "u()", styles: "b{}" });
    const bare = await createAnonymousApp(server, "bare");
    const bareSource = await server.client.get(`/app/${bare.id}/source`, { token: bare.token });
    expect(bareSource.body).toMatchObject({ ui: null, styles: null });
  });

  it("advances the revision 1, 2, 3 across PUT and PATCH and keeps every revision", async () => {
    const app = await createAnonymousApp(server, "rev-seq");
    const put = await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("rev-seq", ["hello", "more"], { version: "0.2.0" })) }, { token: app.token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.headers.get("etag")).toBe('"2"');
    expect(put.body).toMatchObject({ id: app.id, manifestId: "rev-seq", claimed: false, revision: 2, version: "0.2.0", capabilities: { exports: ["hello", "more"] } });
    expect(put.body.url).toBe(`${server.config.baseUrl}/app/${app.id}`);

    const patched = await patch(app.id, app.token, { edits: [{ bucket: "module", old_string: '"0.2.0"', new_string: '"0.3.0"' }] }, '"2"');
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.headers.get("etag")).toBe('"3"');
    expect(patched.body).toEqual({ ok: true, id: app.id, revision: 3 });

    const source = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    expect(source.body.revision).toBe(3);
    expect(source.body.module).toContain('"0.3.0"');

    const versions = await server.ctx.db.selectFrom("app_versions").select(["revision", "module"]).where("app_id", "=", app.id).orderBy("revision").execute();
    expect(versions.map((v) => Number(v.revision))).toEqual([1, 2, 3]);
    expect(versions[1]?.module).toContain('"0.2.0"');
    const active = await server.ctx.apps.activeCode(app.id);
    expect(active).toMatchObject({ revision: 3, ui: null, styles: null, manifest: { id: "rev-seq", version: "0.3.0" } });
    expect((await server.ctx.apps.codeAt(app.id, 1))?.module).not.toContain("0.2.0");

    // Without a version in the manifest, the update response says rev-N.
    const put2 = await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("rev-seq")) }, { token: app.token });
    expect(put2.body).toMatchObject({ revision: 4, version: "rev-4" });
  });

  it("PUT: manifest id is immutable (409 + rename), the body is strict, the caps and manifest rules apply", async () => {
    const app = await createAnonymousApp(server, "immutable");
    const renamed = expectError(await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("other-id")) }, { token: app.token }), 409, "manifest_id_immutable");
    expect(renamed.recovery).toMatchObject({ kind: "rename" });
    expectError(await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("immutable")), pair: true }, { token: app.token }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${app.id}`, {}, { token: app.token }), 400, "invalid_request");
    expectError(await server.client.put(`/app/${app.id}`, { module: "nope(" }, { token: app.token }), 400, "invalid_module");
    const ui = expectError(await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("immutable")), ui: "é".repeat(131073) }, { token: app.token }), 413, "ui_too_large");
    expect(ui.recovery).toMatchObject({ kind: "shrink", field: "ui", size_bytes: 262146, cap_bytes: 262144 });
    const warned = await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("immutable")), ui: 'svc.call("nope")' }, { token: app.token });
    expect(warned.status).toBe(200);
    expect(warned.body.warnings).toHaveLength(1);
    // The failed writes did not move the revision.
    expect(warned.body.revision).toBe(2);
  });

  it("source access: app token while unclaimed, the owner; others 403 or 404; bad ids 400", async () => {
    const app = await createAnonymousApp(server, "guarded");
    const other = await createAnonymousApp(server, "other");
    const stranger = await makeUser(server);
    expectError(await server.client.get(`/app/${app.id}/source`), 403, "forbidden");
    expectError(await server.client.get(`/app/${app.id}/source`, { token: other.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${app.id}/source`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("guarded")) }, { token: other.token }), 403, "forbidden");
    expectError(await patch(app.id, other.token, { edits: [{ bucket: "module", old_string: "hello", new_string: "hi" }] }, '"1"'), 403, "forbidden");

    const owner = await makeUser(server);
    const owned = await server.client.post("/app", { module: moduleSource(manifestOf("mine")) }, { token: owner.token });
    expect((await server.client.get(`/app/${owned.body.id}/source`, { token: owner.token })).status).toBe(200);
    expect((await server.client.get(`/app/${owned.body.id}/source`, { cookie: owner.cookie })).status).toBe(200);
    // A claimed app refuses strangers and anonymous callers (403, spec Authentication rule 4).
    expectError(await server.client.get(`/app/${owned.body.id}/source`, { token: stranger.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${owned.body.id}/source`), 403, "forbidden");
    expectError(await server.client.put(`/app/${owned.body.id}`, { module: moduleSource(manifestOf("mine")) }, { token: app.token }), 403, "forbidden");

    expectError(await patch(owned.body.id, app.token, { edits: [{ bucket: "module", old_string: "a", new_string: "b" }] }, '"1"'), 403, "forbidden");
    expectError(await patch("00000000-0000-4000-8000-000000000000", app.token, { edits: [{ bucket: "module", old_string: "a", new_string: "b" }] }, '"1"'), 404, "app_not_found");
    expectError(await patch("xyz", app.token, { edits: [{ bucket: "module", old_string: "a", new_string: "b" }] }, '"1"'), 400, "invalid_id");
    // Access is checked before the precondition: no If-Match from a stranger is still 403, not 428.
    expectError(await patch(app.id, other.token, { edits: [{ bucket: "module", old_string: "a", new_string: "b" }] }), 403, "forbidden");
    expectError(await server.client.get(`/app/xyz/source`, { token: app.token }), 400, "invalid_id");
    expectError(await server.client.get(`/app/00000000-0000-4000-8000-000000000000/source`, { token: app.token }), 404, "app_not_found");
    expectError(await server.client.put(`/app/xyz`, { module: moduleSource(manifestOf("x")) }, { token: app.token }), 400, "invalid_id");
  });

  it("PATCH preconditions: 428 without one, 412 invalid_if_match for anything but \"N\", 412 revision_mismatch with the current ETag", async () => {
    const app = await createAnonymousApp(server, "precond");
    const edit = { edits: [{ bucket: "module", old_string: "Op hello", new_string: "Op hi" }] };
    const missing = await patch(app.id, app.token, edit);
    expectError(missing, 428, "precondition_required");
    expect(missing.body.error.recovery).toMatchObject({ kind: "refetch", refetch_url: `${server.config.baseUrl}/app/${app.id}/source` });

    for (const bad of ["1", 'W/"1"', '"1", "2"', "*", '"01"', '"x"', "'1'", '""']) {
      const res = await patch(app.id, app.token, edit, bad);
      const error = expectError(res, 412, "invalid_if_match");
      expect(error.recovery, bad).toMatchObject({ kind: "refetch" });
    }

    const stale = await patch(app.id, app.token, edit, '"7"');
    const error = expectError(stale, 412, "revision_mismatch");
    expect(stale.headers.get("etag")).toBe('"1"');
    expect(error.recovery).toMatchObject({ kind: "refetch", refetch_url: `${server.config.baseUrl}/app/${app.id}/source` });

    // expected_revision in the body is the alternative to If-Match.
    const viaBody = await patch(app.id, app.token, { ...edit, expected_revision: 1 });
    expect(viaBody.status, JSON.stringify(viaBody.body)).toBe(200);
    expect(viaBody.body.revision).toBe(2);
    const staleBody = await patch(app.id, app.token, { edits: [{ bucket: "module", old_string: "Op hi", new_string: "Op yo" }], expected_revision: 1 });
    expectError(staleBody, 412, "revision_mismatch");
    expect(staleBody.headers.get("etag")).toBe('"2"');
    expectError(await patch(app.id, app.token, { ...edit, expected_revision: "2" }), 400, "invalid_request");
    // 1e400 parses to Infinity, no revision at all: refused as such, not as a stale one (412).
    const infinite = JSON.stringify({ ...edit, expected_revision: 0 }).replace('"expected_revision":0', '"expected_revision":1e400');
    expectError(await server.client.patch(`/app/${app.id}/source`, undefined, { token: app.token, raw: infinite, headers: { "content-type": "application/json" } }), 400, "invalid_request");
  });

  it("PATCH edits: not found, not unique, atomic batch, in-order application, buckets, strict body, size cap", async () => {
    const app = await createAnonymousApp(server, "edits");
    const at = (rev: number) => `"${rev}"`;
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "module", old_string: "no such text", new_string: "x" }] }, at(1)), 422, "old_string_not_found");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "module", old_string: "e", new_string: "x" }] }, at(1)), 422, "old_string_not_unique");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: "x", new_string: "y" }] }, at(1)), 422, "old_string_not_found");

    // The first edit would apply; the second fails, so nothing is written.
    const batch = await patch(
      app.id,
      app.token,
      { edits: [{ bucket: "module", old_string: "Op hello", new_string: "Op changed" }, { bucket: "module", old_string: "absent", new_string: "y" }] },
      at(1),
    );
    expectError(batch, 422, "old_string_not_found");
    const unchanged = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    expect(unchanged.body.revision).toBe(1);
    expect(unchanged.body.module).toContain("Op hello");

    // An edit that breaks the module fails validation as a whole, too.
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "module", old_string: "export default", new_string: "const x =" }] }, at(1)), 400, "invalid_module");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "module", old_string: '"edits"', new_string: '"renamed"' }] }, at(1)), 409, "manifest_id_immutable");

    // Edits apply in order, each seeing the previous result; `$` patterns are literal.
    const ordered = await patch(
      app.id,
      app.token,
      {
        edits: [
          { bucket: "module", old_string: "Op hello", new_string: "Op step1 $&" },
          { bucket: "module", old_string: "step1 $&", new_string: "step2" },
        ],
      },
      at(1),
    );
    expect(ordered.status, JSON.stringify(ordered.body)).toBe(200);
    const after = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    expect(after.body.module).toContain("Op step2");

    // A UI that calls an undeclared op: a warning, the write stands.
    const put = await server.client.put(`/app/${app.id}`, { module: after.body.module, ui: 'svc.call("hello")', styles: "a{}" }, { token: app.token });
    expect(put.body.revision).toBe(3);
    const uiEdit = await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: '"hello"', new_string: '"ghost"' }, { bucket: "styles", old_string: "a{}", new_string: "b{}" }] }, at(3));
    expect(uiEdit.status).toBe(200);
    expect(uiEdit.body.warnings).toHaveLength(1);
    const final = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    expect(final.body).toMatchObject({ revision: 4, ui: 'svc.call("ghost")', styles: "b{}" });

    expectError(await patch(app.id, app.token, { edits: [] }, at(4)), 400, "invalid_request");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "manifest", old_string: "a", new_string: "b" }] }, at(4)), 400, "invalid_request");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: "", new_string: "b" }] }, at(4)), 400, "invalid_request");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: "a", new_string: "b", extra: 1 }] }, at(4)), 400, "invalid_request");
    expectError(await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: "a", new_string: "b" }], note: "x" }, at(4)), 400, "invalid_request");

    const huge = "z".repeat(600 * 1024);
    const tooLarge = expectError(await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: "ghost", new_string: huge }] }, at(4)), 413, "edits_too_large");
    expect(tooLarge.limit).toBe(512 * 1024);
    expect(tooLarge.recovery).toMatchObject({ kind: "shrink", field: "edits", cap_bytes: 512 * 1024 });
    // A batch under the edits cap whose result is over the ui cap: ui_too_large.
    const grown = await patch(app.id, app.token, { edits: [{ bucket: "ui", old_string: "ghost", new_string: "q".repeat(300 * 1024) }] }, at(4));
    expectError(grown, 413, "ui_too_large");
  });

  it("PUT honours an If-Match when one is sent", async () => {
    const app = await createAnonymousApp(server, "put-if-match");
    const body = { module: moduleSource(manifestOf("put-if-match")) };
    const stale = await server.client.put(`/app/${app.id}`, body, { token: app.token, headers: { "if-match": '"5"' } });
    expectError(stale, 412, "revision_mismatch");
    expect(stale.headers.get("etag")).toBe('"1"');
    expectError(await server.client.put(`/app/${app.id}`, body, { token: app.token, headers: { "if-match": "1" } }), 412, "invalid_if_match");
    const fresh = await server.client.put(`/app/${app.id}`, body, { token: app.token, headers: { "if-match": '"1"' } });
    expect(fresh.status).toBe(200);
    expect(fresh.body.revision).toBe(2);
    const racers = await Promise.all(
      Array.from({ length: 8 }, () => server.client.put(`/app/${app.id}`, body, { token: app.token, headers: { "if-match": '"2"' } })),
    );
    expect(racers.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
  });

  it("parallel PUTs (no precondition, last write wins) each get their own consecutive revision", async () => {
    const app = await createAnonymousApp(server, "puts");
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => server.client.put(`/app/${app.id}`, { module: moduleSource(manifestOf("puts", [`op${i}`])) }, { token: app.token })),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 10 }, () => 200));
    expect(results.map((r) => r.body.revision).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // Each response describes its own write.
    for (const [i, r] of results.entries()) expect(r.body.capabilities.exports).toEqual([`op${i}`]);
    const versions = await server.ctx.db.selectFrom("app_versions").select("revision").where("app_id", "=", app.id).execute();
    expect(versions).toHaveLength(11);
  });

  it("20 parallel PATCHes with the same If-Match: exactly one 200, the rest 412, the revision advanced once", async () => {
    const app = await createAnonymousApp(server, "race");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => patch(app.id, app.token, { edits: [{ bucket: "module", old_string: "Op hello", new_string: `Op winner-${i}` }] }, '"1"')),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(19);
    for (const r of results.filter((x) => x.status === 412)) {
      expect(r.body.error.kind).toBe("revision_mismatch");
      expect(r.headers.get("etag")).toBe('"2"');
    }
    const source = await server.client.get(`/app/${app.id}/source`, { token: app.token });
    expect(source.body.revision).toBe(2);
    const winner = results.findIndex((r) => r.status === 200);
    expect(source.body.module).toContain(`Op winner-${winner}`);
    const versions = await server.ctx.db.selectFrom("app_versions").select("revision").where("app_id", "=", app.id).execute();
    expect(versions).toHaveLength(2);
  });
});
