import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appCode } from "../src/runtime/operations/app-code.ts";
import { Staged } from "../src/domain/operations/as-app.ts";
import { makeUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// A source write stages its code's isolate before it commits; the warm-up its `published` event
// starts then takes that isolate over for the app's active revision. With writers racing, another
// write may have published a newer revision by the time the warm-up reads the app: the staged
// isolate holds the older write's code, and taken over it would have answered the newer
// revision's calls with the older code (seen as a warm-up adopting revision N's build for N+1
// about once in six rounds of six concurrent writes). The ordering is forced here: the newer
// revision is published first, its isolate not yet built, then the older write's warm-up comes.
const source = (v: number) => `export const manifest = { id: "taken-over", routes: { which: {} } };
export default { async fetch() { return Response.json({ ok: true, value: ${v} }); } };`;

describe("a staged isolate is taken over only by the revision its write published", () => {
  let server: TestServer;
  let token: string;
  let userId: string;
  beforeAll(async () => {
    server = await startServer({});
    // A paid account: its apps run on the claimed lane, where the staging below builds too.
    ({ id: userId, token } = await makeUser(server, "pro"));
  });
  afterAll(async () => server.close());

  it("a warm-up of an older write builds the active revision from its own code", async () => {
    const created = await server.client.post("/app", { module: source(1) }, { token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    // Not called yet, so this write stages nothing and warms nothing: revision 2 is published, unbuilt.
    const put = await server.client.put(`/app/${id}`, { module: source(2) }, { token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.revision).toBe(2);

    // The older write (revision 1's) staged its code, and its warm-up comes now.
    const app = await server.ctx.apps.get(id);
    if (app === null) throw new Error("the app is gone");
    const target = { id, revision: 1, manifest: app.manifest, plan: "pro" as const, secretsVersion: 0, lane: "claimed" as const, ownerId: userId };
    const older = await server.ctx.operations.stage(target, appCode(source(1), app.manifest));
    await older.built;
    server.ctx.runner.warm(id, 1, new Staged(id, Promise.resolve({ ...older, secretsVersion: 0 })));
    await server.ctx.runner.warmed(id);

    const call = await server.client.post(`/app/${id}/api/which`, {}, { token });
    expect(call.status, JSON.stringify(call.body)).toBe(200);
    expect(call.body.value).toBe(2);
  });
});
