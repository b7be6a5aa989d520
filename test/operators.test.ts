import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { manualClock } from "./helpers/pairing.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const KV_APP = (id: string) => `export const manifest = {
  id: ${JSON.stringify(id)},
  capabilities: { imports: ["svc:storage/kv@1.0"] },
  routes: { bump: { access: "write", input: { type: "object" } }, look: { access: "read", input: { type: "object" } } },
};
export default { async fetch(request, env) {
  const op = request.headers.get("x-svc-op");
  if (op === "bump") await env.KV.set("n", ((await env.KV.get("n")) ?? 0) + 1);
  return Response.json({ ok: true, value: await env.KV.get("n") });
} };`;

/** Issue 45: operators stop apps and accounts; everything of them stops, nothing is lost, and it is all audited. */
describeEachDialect("operators: suspension, reports, audit", (dialect) => {
  let server: TestServer;
  let operator: FixtureUser;
  let owner: FixtureUser;
  let appId: string;
  const origin = () => ({ origin: new URL(server.config.baseUrl).origin });
  const clock = () => manualClock(server);

  beforeAll(async () => {
    // Behind a trusted proxy, so each request can say which address it comes from.
    server = await startServer({ dialect, clock: "manual", env: { TRUST_PROXY: "127.0.0.1" } });
    operator = await makeUser(server);
    await server.ctx.users.setRole(operator.handle, "operator");
    owner = await makeUser(server);
    const created = await server.client.post("/app", { module: KV_APP("counter") }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id as string;
  });
  afterAll(async () => server.close());

  const admin = (method: "get" | "post" | "delete", path: string, body?: unknown) =>
    method === "get" ? server.client.get(path, { token: operator.token }) : method === "post" ? server.client.post(path, body, { token: operator.token }) : server.client.delete(path, { token: operator.token });
  const call = (op: string, token = owner.token) => server.client.post(`/app/${appId}/api/${op}`, {}, { token });

  it("a suspended app: op calls, its page, frame, MCP tools and webhook answer 403; its routine skips; the owner reads why; lifted, it runs on with its data", async () => {
    expect((await call("bump")).body).toEqual({ ok: true, value: 1 });
    const hook = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "bump" }, { token: owner.token });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const routine = await server.client.post(`/api/v1/apps/${appId}/routines`, { op: "bump", interval: "hourly" }, { token: owner.token });
    expect(routine.status, JSON.stringify(routine.body)).toBe(201);

    expect((await admin("post", `/api/v1/admin/apps/${appId}/suspend`, { reason: "phishing page reported twice" })).status).toBe(200);
    const refused = expectError(await call("bump"), 403, "forbidden");
    expect(refused.message).toBe("suspended by the operator");
    expectError(await call("look"), 403, "forbidden");
    const page = await server.client.get(`/@${owner.handle}/counter`, { token: owner.token, headers: { accept: "text/html" } });
    expect(page.status).toBe(403);
    expect(page.text).toContain("suspended by the operator");
    expect(page.text).not.toContain("phishing page reported twice");
    expectError(await server.client.get(`/@${owner.handle}/counter`, { token: owner.token }), 403, "forbidden");
    const mcp = await server.client.post(`/app/${appId}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list" }, { token: owner.token, headers: { accept: "application/json, text/event-stream" } });
    expectError(mcp, 403, "forbidden");
    const delivered = await server.client.post(`/api/v1/hooks/${hook.body.webhook.id}`, {}, { token: hook.body.webhook.secret });
    expect(delivered.status).toBe(403);
    // The routine's slot comes and goes without a run or a failure.
    const routines = server.ctx.routines;
    clock().advance(2 * 3_600_000);
    expect(await routines.runDue(server.clock.now())).toBe(0);
    const after = await server.client.get(`/api/v1/routines/${routine.body.routine.id}`, { token: owner.token });
    expect(after.body.routine ?? after.body).toMatchObject({ enabled: true, consecutive_failures: 0, last_run_at: null });
    // The owner's console says why.
    const overview = await server.client.get(`/apps/${appId}`, { cookie: owner.cookie });
    expect(overview.text).toContain("This app is suspended by the operator: phishing page reported twice");

    // Nor does its code get a second life as a copy, or its assets out through old signed URLs.
    expectError(await server.client.post(`/app/${appId}/copy`, { manifest_id: "counter-copy" }, { token: owner.token }), 403, "forbidden");
    expectError(await server.client.get(`/app/${appId}/assets/logo.png?exp=9999999999&sig=x`), 403, "forbidden");
    // A routine run by hand is refused before it runs: no failure counted.
    expectError(await server.client.post(`/api/v1/routines/${routine.body.routine.id}/run`, {}, { token: owner.token }), 403, "forbidden");

    expect((await admin("post", `/api/v1/admin/apps/${appId}/unsuspend`)).status).toBe(200);
    expect((await call("bump")).body).toEqual({ ok: true, value: 2 });
    expect((await server.client.get(`/api/v1/routines/${routine.body.routine.id}`, { token: owner.token })).body.routine).toMatchObject({ consecutive_failures: 0 });
    expect(await routines.runDue(server.clock.now() + 3_600_000)).toBe(1);
    expect((await call("look")).body).toEqual({ ok: true, value: 3 });
  });

  it("a suspended account: sign-in, session and tokens are refused 401, its apps stop; lifted, the same token works again", async () => {
    const person = await makeUser(server);
    const made = await server.client.post("/app", { module: KV_APP("theirs") }, { token: person.token });
    const theirs = made.body.id as string;
    expect((await admin("post", `/api/v1/admin/users/${person.handle}/suspend`, { reason: "spam" })).status).toBe(200);
    expect(expectError(await server.client.get("/api/me", { token: person.token }), 401, "unauthorized").message).toContain("suspended");
    expectError(await server.client.get("/api/me", { cookie: person.cookie }), 401, "unauthorized");
    expectError(await server.client.post("/api/auth/login", { login: person.handle, password: "correct horse battery staple" }), 401, "unauthorized");
    // Someone else calling the suspended account's app (its own app token is the owner's now): 403.
    expectError(await server.client.post(`/app/${theirs}/api/look`, {}, { token: operator.token }), 403, "forbidden");
    // Its app has no suspension of its own to lift: saying "lifted" would leave it stopped.
    expect(expectError(await admin("post", `/api/v1/admin/apps/${theirs}/unsuspend`), 400, "invalid_request").message).toContain(`@${person.handle}`);
    const lifts = await server.ctx.db.selectFrom("audit_log").select("id").where("action", "=", "app.unsuspend").where("target_id", "=", theirs).execute();
    expect(lifts).toEqual([]);
    // The suspended person may still sign out (from our own pages): the session ends for good.
    const signedOut = await server.client.post("/api/auth/logout", {}, { cookie: person.cookie, headers: origin() });
    expect(signedOut.status).toBe(200);
    expect((await admin("post", `/api/v1/admin/users/${person.handle}/unsuspend`)).status).toBe(200);
    expect((await server.client.get("/api/me", { token: person.token })).status).toBe(200);
    expectError(await server.client.get("/api/me", { cookie: person.cookie }), 401, "sign_in_required");
    expect((await server.client.post(`/app/${theirs}/api/look`, {}, { token: person.token })).status).toBe(200);
  });

  it("reports: the form keeps one per post, 5 an hour from one address, bad input refused; operators list them newest first", async () => {
    const form = (reason: string, details = "") => server.client.request("POST", `/app/${appId}/report`, undefined, { raw: new URLSearchParams({ reason, details }).toString(), headers: { ...origin(), "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "198.51.100.7" } });
    const reportPage = (await server.client.get(`/app/${appId}/report`, { headers: { accept: "text/html" } })).text;
    expect(reportPage).toContain("Phishing or stealing passwords");
    // A private app's name is not told to whoever holds its id.
    expect(reportPage).toContain("Report this app");
    expectError(await server.client.request("POST", `/app/${appId}/report`, { reason: "nonsense" }, { headers: { ...origin(), accept: "application/json" } }), 400, "invalid_request");
    expectError(await server.client.request("POST", `/app/${appId}/report`, { reason: "spam", details: "x".repeat(2100) }, { headers: { ...origin(), accept: "application/json" } }), 400, "invalid_request");
    const sent = await form("phishing", "asks for bank passwords");
    expect(sent.status, sent.text).toBe(201);
    expect(sent.text).toContain("Thank you");
    const listed = await admin("get", "/api/v1/admin/reports");
    expect(listed.body.reports[0]).toMatchObject({ appId, reason: "phishing", details: "asks for bank passwords", reporterIp: "198.51.100.7" });
    // Four more from the address make five in the hour; the sixth is refused and kept nowhere.
    for (let i = 0; i < 4; i++) expect((await form("spam", `again ${i}`)).status).toBe(201);
    const sixth = await form("spam", "one too many");
    expect(sixth.status).toBe(429);
    const kept = (await admin("get", "/api/v1/admin/reports")).body.reports as { details: string; reporterIp: string }[];
    expect(kept.filter((r) => r.reporterIp === "198.51.100.7")).toHaveLength(5);
    expect(kept.map((r) => r.details)).not.toContain("one too many");
  });

  it("the audit log: each action one row with actor, action, target and address; none for an action that failed; no token or secret value in any row", async () => {
    const before = await server.ctx.auditLog.list({ limit: 500 });
    const headers = { "x-forwarded-for": "203.0.113.9" };
    const minted = await server.client.post("/api/token", { name: "laptop" }, { token: owner.token, headers });
    expect(minted.status).toBe(201);
    expect((await server.client.delete(`/api/token/${minted.body.id}`, { token: owner.token, headers })).status).toBe(200);
    const secret = "sk_live_the_secret_value_42";
    expect((await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: secret }, { token: owner.token })).status).toBeLessThan(300);
    const friend = await makeUser(server);
    const invited = await server.client.post(`/api/v1/apps/${appId}/shares`, { grantee: friend.handle, role: "viewer" }, { token: owner.token, headers });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/accept`, {}, { token: friend.token, headers })).status).toBe(200);
    expect((await server.client.post(`/api/v1/apps/${appId}/shares/${invited.body.shareId}/revoke`, {}, { token: owner.token, headers })).status).toBe(200);
    const anon = await server.client.post("/app", { module: KV_APP("to-claim") });
    expect((await server.client.post(`/app/${anon.body.id}/claim`, { token: anon.body.token }, { token: owner.token, headers })).status).toBe(200);
    // A claim that fails inside its transaction (the owner already has an app of that manifest id:
    // the update after its audit row breaks the unique key) leaves no row.
    const twin = await server.client.post("/app", { module: KV_APP("to-claim") });
    expectError(await server.client.post(`/app/${twin.body.id}/claim`, { token: twin.body.token }, { token: owner.token, headers }), 409, "manifest_id_conflict");
    expect((await server.client.delete(`/app/${anon.body.id}`, { token: owner.token, headers })).status).toBe(200);

    const rows = (await server.ctx.auditLog.list({ limit: 500 })).filter((r) => !before.some((b) => b.id === r.id)).reverse();
    // One row each (rows written in one millisecond of the test's clock have no order among them).
    expect(rows.map((r) => r.action).sort()).toEqual(["app.claim", "app.delete", "share.accept", "share.invite", "share.revoke", "token.mint", "token.revoke"]);
    for (const row of rows) {
      expect(row.ip, row.action).toBe("203.0.113.9");
      expect(row.actor.kind).toBe("user");
      expect(row.actor.handle).toBe(row.action === "share.accept" ? friend.handle : owner.handle);
      expect(row.target.id).not.toBe("");
    }
    expect(rows.find((r) => r.action === "app.claim")?.target.id).toBe(anon.body.id);
    expect(rows.filter((r) => r.action === "app.claim")).toHaveLength(1);
    const all = JSON.stringify(await server.ctx.auditLog.list({ limit: 1000 }));
    for (const value of [minted.body.token, anon.body.token, twin.body.token, owner.token, operator.token, secret]) expect(all).not.toContain(value);
    // The operator's own actions, with the operator's handle, from the earlier tests.
    const byOperator = await admin("get", `/api/v1/admin/audit?actor=${operator.handle}`);
    expect((byOperator.body.entries as { action: string }[]).map((e) => e.action)).toEqual(expect.arrayContaining(["app.suspend", "app.unsuspend", "user.suspend", "user.unsuspend"]));
    expectError(await admin("get", "/api/v1/admin/audit?since=yesterday"), 400, "invalid_request");
    // A person reads their own rows.
    const own = await server.client.get("/account/audit", { cookie: owner.cookie });
    expect(own.text).toContain("token.mint");
    expect(own.text).not.toContain("user.suspend");
    // The operator's suspension of the owner's app is there, without naming the operator or their address.
    expect(own.text).toContain("app.suspend");
    expect(own.text).not.toContain(operator.handle);
  });

  it("search: users by part of a handle or email (wildcards taken literally), apps by name, owner or anonymous", async () => {
    const odd = await server.ctx.users.create({ email: "first_last@example.test", handle: "under-score", password: "correct horse battery staple" });
    const users = async (q: string) => ((await admin("get", `/api/v1/admin/users?q=${encodeURIComponent(q)}`)).body.users as { handle: string }[]).map((u) => u.handle);
    expect(await users("first_last")).toEqual([odd.handle]);
    // `_` and `%` are not wildcards: "first%last" matches nobody.
    expect(await users("first%last")).toEqual([]);
    expect(await users("FIRST_LAST@EXAMPLE")).toEqual([odd.handle]);
    const apps = async (q: string) => ((await admin("get", `/api/v1/admin/apps?q=${encodeURIComponent(q)}`)).body.apps as { id: string; owner: string | null }[]);
    expect((await apps("COUNTER")).map((a) => a.id)).toContain(appId);
    expect((await apps(owner.handle)).map((a) => a.id)).toContain(appId);
    expect((await apps("anonymous")).every((a) => a.owner === null)).toBe(true);
  });

  it("search: the app an exact id names, and the person an exact handle names, come first, however many newer rows contain the text", async () => {
    const hostile = await makeUser(server);
    for (let i = 0; i < 51; i++) {
      const decoy = await server.client.post("/app", { module: KV_APP(`decoy-${i}`).replace("manifest = {", `manifest = { displayName: "notes ${appId}",`) }, { token: hostile.token });
      expect(decoy.status, JSON.stringify(decoy.body)).toBe(201);
    }
    const found = (await admin("get", `/api/v1/admin/apps?q=${appId}`)).body.apps as { id: string }[];
    expect(found).toHaveLength(50);
    expect(found[0]?.id).toBe(appId);
    expect((await server.client.get(`/admin/apps/${appId}`, { token: operator.token, headers: { accept: "text/html" } })).status).toBe(200);
    for (let i = 0; i < 51; i++) await server.ctx.users.create({ email: `x${i}${owner.handle}@example.test`, handle: `${owner.handle}-${i}`, password: "correct horse battery staple" });
    expect(((await admin("get", `/api/v1/admin/users?q=${owner.handle}`)).body.users as { handle: string }[])[0]?.handle).toBe(owner.handle);
  });

  it("CLI-made operators only: a member, an app token and no credential get 404 from the admin API", async () => {
    expectError(await server.client.get("/api/v1/admin/apps", { token: owner.token }), 404, "not_found");
    expectError(await server.client.get("/api/v1/admin/apps"), 404, "not_found");
    // Even a request the route would refuse as malformed: the gate answers first.
    expectError(await server.client.post(`/api/v1/admin/apps/${appId}/suspend`, { nonsense: true }, { token: owner.token }), 404, "not_found");
    expectError(await admin("post", `/api/v1/admin/apps/${appId}/suspend`, { nonsense: true }), 400, "invalid_request");
    expectError(await admin("post", `/api/v1/admin/users/${operator.handle}/suspend`, { reason: "self" }), 400, "invalid_request");
  });
  it("a plan set from the CLI (`brickyard user plan`) is an audited operator action, as a role is", async () => {
    const person = await makeUser(server);
    await server.ctx.users.setPlan(person.handle, "pro");
    const rows = (await admin("get", `/api/v1/admin/audit?target=${person.id}`)).body.entries as { action: string; actor: { kind: string }; detail: Record<string, unknown> }[];
    expect(rows).toEqual([expect.objectContaining({ action: "user.plan", actor: expect.objectContaining({ kind: "cli" }), detail: { handle: person.handle, plan: "pro", was: "free" } })]);
  });

  it("the hourly sweep keeps a year of audit rows", async () => {
    const n = (await server.ctx.auditLog.list({ limit: 1000 })).length;
    expect(n).toBeGreaterThan(0);
    clock().advance(366 * 86_400_000);
    await server.ctx.auditLog.sweep();
    expect(await server.ctx.auditLog.list({ limit: 1000 })).toEqual([]);
  });
});
