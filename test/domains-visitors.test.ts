import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startDns, type TestDns } from "./helpers/dns-server.ts";
import { makePro, makePublic, serveAt } from "./helpers/domains.ts";
import { viaHost } from "./helpers/host-request.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const COUNTER = `export const manifest = {
  id: "visits",
  displayName: "Visits",
  capabilities: { imports: ["svc:storage/kv@1.0", "svc:storage/blob@1.0"] },
  routes: {
    bump: { access: "write", input: { type: "object" } },
    count: { access: "read", input: { type: "object" } },
    keep: { access: "write", input: { type: "object" } },
    big: { access: "write", input: { type: "object" } },
  },
};
export default { async fetch(request, env) {
  const op = request.headers.get("x-svc-op");
  if (op === "keep") { await env.BLOB.put("file", "bytes"); return Response.json({ ok: true, value: true }); }
  if (op === "big") { await env.KV.set("big", "x".repeat(10 * 1024 * 1024 + 1)); return Response.json({ ok: true, value: true }); }
  if (op === "bump") await env.KV.set("n", ((await env.KV.get("n")) ?? 0) + 1);
  return Response.json({ ok: true, value: { n: (await env.KV.get("n")) ?? 0, keys: (await env.KV.list()).keys.map((k) => k.key) } });
} };`;

/** A visitor's browser, reduced to what it carries: the domain's cookie, and what the page hands the frame. */
interface Visit {
  cookie: string;
  token: string;
  pass: string;
}

describeEachDialect("custom domains: each anonymous visitor has a store of their own (spec, DECISIONS §12)", (dialect) => {
  let server: TestServer;
  let dns: TestDns;
  let owner: TestUser;
  let appId: string;

  beforeAll(async () => {
    dns = await startDns();
    server = await startServer({ dialect, env: { DNS_RESOLVER: dns.address } });
    owner = await createUser(server);
    await makePro(server, owner.id);
    appId = (await server.client.post("/app", { module: COUNTER }, { token: owner.token })).body.id;
    await makePublic(server, owner.token, appId);
    await serveAt(server, dns, owner.token, appId, "visits.example.test");
  });
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  /** Opens the page on the domain as a browser with `cookie` (none: a first visit). */
  async function open(cookie = ""): Promise<Visit> {
    const page = await viaHost(server.url, "visits.example.test", "/", { headers: cookie === "" ? {} : { cookie } });
    expect(page.status).toBe(200);
    const src = /src="([^"]+\/frame\?[^"]+)"/.exec(page.body)?.[1]?.replaceAll("&amp;", "&") ?? "";
    const query = new URL(src).searchParams;
    const set = ([] as string[]).concat(page.headers["set-cookie"] ?? []).map((c) => c.split(";")[0] ?? "");
    return { cookie: set.find((c) => c.startsWith("svc_visitor=")) ?? cookie, token: query.get("t") ?? "", pass: query.get("v") ?? "" };
  }
  const call = (visit: Pick<Visit, "token" | "pass">, op: string, host = "visits.example.test", id = appId) =>
    viaHost(server.url, host, `/app/${id}/api/${op}`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${visit.token}`, ...(visit.pass === "" ? {} : { "x-svc-visitor": visit.pass }) } }).then((res) => ({ status: res.status, body: JSON.parse(res.body) as { ok: boolean; value?: { n: number; keys: string[] }; error?: { kind: string } } }));

  it("two visitors keep their own counts, a returning visitor finds theirs, the owner's store is untouched", async () => {
    for (let i = 0; i < 2; i++) expect((await server.client.post(`/app/${appId}/api/bump`, {}, { token: owner.token })).status).toBe(200);

    const ada = await open();
    expect(ada.cookie).toMatch(/^svc_visitor=[A-Za-z0-9_-]{22}$/);
    expect(ada.pass).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    expect((await call(ada, "bump")).body.value).toEqual({ n: 1, keys: ["n"] });
    expect((await call(ada, "bump")).body.value).toEqual({ n: 2, keys: ["n"] });
    const bea = await open();
    expect(bea.pass.split(".")[0]).not.toBe(ada.pass.split(".")[0]);
    expect((await call(bea, "count")).body.value).toEqual({ n: 0, keys: [] });
    expect((await call(bea, "bump")).body.value).toEqual({ n: 1, keys: ["n"] });

    // Ada comes back with her cookie: the same store.
    const again = await open(ada.cookie);
    expect(again.pass).toBe(ada.pass);
    expect((await call(again, "count")).body.value).toEqual({ n: 2, keys: ["n"] });

    // The owner, signed in, reaches the owner's store, on the main origin and on the domain.
    expect((await server.client.post(`/app/${appId}/api/count`, {}, { token: owner.token })).body.value).toEqual({ n: 2, keys: ["n"] });
    const ownerOnDomain = await viaHost(server.url, "visits.example.test", `/app/${appId}/api/count`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${owner.token}` } });
    expect(JSON.parse(ownerOnDomain.body).value).toEqual({ n: 2, keys: ["n"] });
  });

  it("an anonymous call on the domain without a valid pass is refused; a pass is worth nothing for another app or off the domain", async () => {
    const visit = await open();
    const none = await call({ token: visit.token, pass: "" }, "count");
    expect([none.status, none.body.error?.kind]).toEqual([403, "forbidden"]);
    const [id] = visit.pass.split(".");
    const forged = await call({ token: visit.token, pass: `${id}.${"A".repeat(43)}` }, "count");
    expect([forged.status, forged.body.error?.kind]).toEqual([403, "forbidden"]);
    const swapped = await call({ token: visit.token, pass: `${"B".repeat(22)}.${visit.pass.split(".")[1]}` }, "count");
    expect([swapped.status, swapped.body.error?.kind]).toEqual([403, "forbidden"]);
    // On the main origin an anonymous call is the public app's, as it always was: the pass changes nothing.
    const main = await server.client.post(`/app/${appId}/api/count`, {}, { token: visit.token, headers: { "x-svc-visitor": visit.pass } });
    expect(main.body.value.n).toBe(2);
  });

  it("a visitor's store has the app's caps; a visitor's call may not use the owner's blobs; deleting the app deletes every visitor's store", async () => {
    const visit = await open();
    const big = await call(visit, "big");
    expect([big.status, big.body.error?.kind]).toEqual([413, "stored_value_too_large"]);
    const blob = await call(visit, "keep");
    expect([blob.status, blob.body.error?.kind]).toEqual([403, "capability_denied"]);
    const rows = async () => Number((await server.ctx.db.selectFrom("visitor_kv").select((eb) => eb.fn.countAll<number>().as("n")).where("app_id", "=", appId).executeTakeFirstOrThrow()).n);
    expect(await rows()).toBe(2);
    // A year without a write: a visitor's store goes with the hourly sweep; a recent one stays.
    const [stale] = await server.ctx.db.selectFrom("visitor_kv").select("visitor_id").where("app_id", "=", appId).execute();
    await server.ctx.db.updateTable("visitor_stores").set({ updated_at: Date.now() - 366 * 24 * 3600 * 1000 }).where("visitor_id", "=", stale?.visitor_id ?? "").execute();
    expect(await server.ctx.visitors.sweep()).toBe(1);
    expect(await rows()).toBe(1);
    expect((await server.client.delete(`/app/${appId}`, { token: owner.token })).status).toBe(200);
    expect(await rows()).toBe(0);
  });
});
