import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/accounts.ts";
import { CONSUMED_KEPT_MS } from "../../src/domain/oauth/records.ts";
import { AUTHORIZATIONS_PER_NETWORK, METADATA_CLIENTS_PER_NETWORK, TOKEN_REQUESTS_PER_NETWORK } from "../../src/routes/oauth/protocol.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { authorize, mcpWith, register, token } from "../helpers/oauth-client.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { startTlsFixture, type TlsFixture } from "../helpers/tls-fixture.ts";

const REDIRECT = "http://127.0.0.1:9/callback";
const ONE = `export const manifest = { id: "one", displayName: "One", routes: { one: { access: "read", input: { type: "object" } } } };
export default { fetch() { return Response.json({ ok: true, value: 1 }); } };`;

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** The refusal a client's redirect carries: the error, and whether a code came with it. */
function redirected(res: Response): { error: string | null; code: string | null } {
  const to = new URL(res.headers.get("location") ?? "http://none.invalid/");
  return { error: to.searchParams.get("error"), code: to.searchParams.get("code") };
}

/**
 * DECISIONS §17 under attack: every way to get a token one should not have is refused with
 * OAuth's own error, and nothing is issued. Run on both stores: the grant and token rows are
 * the authorization server's, in ours.
 */
describeEachDialect("hostile: the OAuth authorization server", (dialect) => {
  let server: TestServer;
  let fixture: TlsFixture;
  let person: TestUser;
  let clientId: string;
  let otherClientId: string;
  let base: string;
  // Metadata documents the server asked the fixture for, of those the allowance counts.
  const fetched: string[] = [];
  // Bodies the metadata-document fixture serves, by path.
  const slowMs = 7_000;

  beforeAll(async () => {
    fixture = await startTlsFixture(["docs.fixture.test"], (req, res) => {
      if (req.url?.startsWith("/counted-") === true) fetched.push(req.url);
      if (req.url === "/huge.json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(`{"client_name":"${"x".repeat(200_000)}"}`);
        return;
      }
      if (req.url === "/slow.json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.write("{");
        setTimeout(() => res.end("}"), slowMs).unref();
        return;
      }
      res.writeHead(404).end();
    });
    server = await startServer({ dialect, egressTestOverrides: { hosts: { [`docs.fixture.test:${fixture.port}`]: `127.0.0.1:${fixture.port}` }, caPem: fixture.caPem } });
    base = server.url;
    person = await createUser(server);
    const metadata = { client_name: "Honest client", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"], response_types: ["code"] };
    clientId = String((await register(base, metadata)).body.client_id);
    otherClientId = String((await register(base, { ...metadata, client_name: "Other client" })).body.client_id);
  });
  afterAll(async () => {
    await server?.close();
    await fixture?.close();
  });

  /** A code for `client` through the consent page, with its verifier. */
  async function code(client = clientId, resource = `${base}/mcp`): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = pkce();
    const res = await authorize(base, person.cookie, { response_type: "code", client_id: client, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", resource, scope: "mcp", state: "s" });
    const got = redirected(res);
    expect(got.error, res.headers.get("location") ?? String(res.status)).toBeNull();
    return { code: got.code ?? "", verifier };
  }

  const exchange = (c: { code: string; verifier: string }, extra: Record<string, string> = {}) =>
    token(base, { grant_type: "authorization_code", code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id: clientId, resource: `${base}/mcp`, ...extra });

  it("registration: http redirect URIs off loopback and secret-holding clients are refused", async () => {
    const web = await register(base, { client_name: "x", redirect_uris: ["http://evil.example/cb"], token_endpoint_auth_method: "none" });
    expect([web.status, web.body.error]).toEqual([400, "invalid_redirect_uri"]);
    const secret = await register(base, { client_name: "x", redirect_uris: [REDIRECT], token_endpoint_auth_method: "client_secret_basic" });
    expect([secret.status, secret.body.error]).toEqual([400, "invalid_client_metadata"]);
  });

  it("a path under /oauth/ that is no endpoint answers the service's 404 envelope, not the library's bare text", async () => {
    for (const path of ["/oauth/nope", "/oauth/registerx", "/oauth/consentx/1"]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { kind: string } }).error.kind, path).toBe("not_found");
    }
    // The endpoints themselves, and the paths under them, still reach the library.
    expect((await fetch(`${base}/oauth/jwks`)).status).toBe(200);
  });

  it("a redirect URI that was not registered is refused without redirecting anywhere", async () => {
    const { challenge } = pkce();
    const res = await authorize(base, person.cookie, { response_type: "code", client_id: clientId, redirect_uri: "https://evil.example/steal", code_challenge: challenge, code_challenge_method: "S256", scope: "mcp" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(((await res.json()) as { error: string }).error).toBe("invalid_redirect_uri");
  });

  it("PKCE: missing or plain is refused at authorize; a wrong verifier at the token endpoint", async () => {
    const missing = await authorize(base, person.cookie, { response_type: "code", client_id: clientId, redirect_uri: REDIRECT, scope: "mcp" });
    expect(redirected(missing)).toEqual({ error: "invalid_request", code: null });
    const plain = await authorize(base, person.cookie, { response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: "a".repeat(43), code_challenge_method: "plain", scope: "mcp" });
    expect(redirected(plain)).toEqual({ error: "invalid_request", code: null });
    const issued = await code();
    const wrong = await exchange({ code: issued.code, verifier: pkce().verifier });
    expect([wrong.status, wrong.body.error, wrong.body.access_token]).toEqual([400, "invalid_grant", undefined]);
  });

  it("a code used twice: the second is refused and the tokens the first gave are revoked", async () => {
    const issued = await code();
    const first = await exchange(issued);
    expect(first.status).toBe(200);
    expect((await mcpWith(`${base}/mcp`, first.body.access_token ?? "")).status).toBe(200);
    const second = await exchange(issued);
    expect([second.status, second.body.error]).toEqual([400, "invalid_grant"]);
    expect((await mcpWith(`${base}/mcp`, first.body.access_token ?? "")).status).toBe(401);
    const refresh = await token(base, { grant_type: "refresh_token", refresh_token: first.body.refresh_token ?? "", client_id: clientId });
    expect([refresh.status, refresh.body.error]).toEqual([400, "invalid_grant"]);
  });

  it("a code redeemed by another client is refused", async () => {
    const issued = await code();
    const stolen = await exchange(issued, { client_id: otherClientId });
    expect([stolen.status, stolen.body.error, stolen.body.access_token]).toEqual([400, "invalid_grant", undefined]);
  });

  it("a token is good only at the resource it was issued for; a resource that is not ours is refused", async () => {
    const created = await server.client.post("/app", { module: ONE }, { token: person.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const appResource = `${base}/app/${created.body.id}/mcp`;
    const { challenge, verifier } = pkce();
    const res = await authorize(base, person.cookie, { response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", resource: appResource, scope: "mcp" });
    const forApp = await token(base, { grant_type: "authorization_code", code: redirected(res).code ?? "", code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId, resource: appResource });
    expect(forApp.status).toBe(200);
    expect((await mcpWith(appResource, forApp.body.access_token ?? "")).status).toBe(200);
    const elsewhere = await mcpWith(`${base}/mcp`, forApp.body.access_token ?? "");
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.challenge).toContain('error="invalid_token"');
    // Nor is an access token a REST credential.
    expect((await server.client.get("/app", { token: forApp.body.access_token ?? "" })).status).toBe(401);
    const foreign = await authorize(base, person.cookie, { response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", resource: "https://evil.example/mcp", scope: "mcp" });
    expect(redirected(foreign)).toEqual({ error: "invalid_target", code: null });
  });

  it("a refresh token used twice kills the whole grant", async () => {
    const first = await exchange(await code());
    const rotated = await token(base, { grant_type: "refresh_token", refresh_token: first.body.refresh_token ?? "", client_id: clientId });
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).not.toBe(first.body.refresh_token);
    const replay = await token(base, { grant_type: "refresh_token", refresh_token: first.body.refresh_token ?? "", client_id: clientId });
    expect([replay.status, replay.body.error]).toEqual([400, "invalid_grant"]);
    expect((await mcpWith(`${base}/mcp`, rotated.body.access_token ?? "")).status).toBe(401);
    const next = await token(base, { grant_type: "refresh_token", refresh_token: rotated.body.refresh_token ?? "", client_id: clientId });
    expect([next.status, next.body.error]).toEqual([400, "invalid_grant"]);
  });

  it("metadata document URLs on loopback, private ranges, address literals, huge or slow bodies are refused and nothing is issued", { timeout: 30_000 }, async () => {
    const { challenge } = pkce();
    const urls = [
      "https://localhost/client.json",
      "https://127.0.0.1/client.json",
      "https://10.0.0.1/client.json",
      "https://[::1]/client.json",
      "https://169.254.169.254/latest/meta-data",
      `https://docs.fixture.test:${fixture.port}/huge.json`,
      `https://docs.fixture.test:${fixture.port}/slow.json`,
    ];
    for (const url of urls) {
      const started = Date.now();
      const res = await authorize(base, person.cookie, { response_type: "code", client_id: url, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", scope: "mcp" });
      expect(res.status, url).toBe(400);
      expect(res.headers.get("location"), url).toBeNull();
      expect(((await res.json()) as { error: string }).error, url).toBe("invalid_client");
      expect(Date.now() - started, url).toBeLessThan(slowMs);
    }
  });

  it("consent forged from another origin is refused and issues nothing; the sign-in detour cannot leave the site", async () => {
    const { challenge } = pkce();
    const start = await fetch(`${base}/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", scope: "mcp" }).toString()}`, { redirect: "manual" });
    const consentAt = start.headers.get("location") ?? "";
    const cookies = [person.cookie, ...start.headers.getSetCookie().map((c) => c.split(";")[0])].join("; ");
    const forged = await fetch(new URL(consentAt, base), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies, origin: "https://evil.example" }, body: "decision=approve", redirect: "manual" });
    expect(forged.status).toBe(403);
    expect(forged.headers.get("location")).toBeNull();
    // Signed out, the consent page sends the person to sign in and back to itself, nowhere else.
    const signedOut = await fetch(new URL(consentAt, base), { headers: { cookie: start.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ") }, redirect: "manual" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe(`/sign-in?return_to=${encodeURIComponent(consentAt)}`);
    const detour = await fetch(`${base}/sign-in?return_to=${encodeURIComponent("//evil.example/x")}`);
    expect(await detour.text()).not.toContain("evil.example");
  });

  it("MCP without a token is 401 with the challenge; the metadata names this server", async () => {
    for (const path of ["/mcp", "/app/abc/mcp"]) {
      const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } }) });
      expect(res.status, path).toBe(401);
      expect(res.headers.get("www-authenticate"), path).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource${path}", scope="mcp"`);
      const metadata = (await (await fetch(`${base}/.well-known/oauth-protected-resource${path}`)).json()) as { resource: string; authorization_servers: string[] };
      expect(metadata).toMatchObject({ resource: `${base}${path}`, authorization_servers: [base] });
    }
    const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(as).toMatchObject({ issuer: base, code_challenge_methods_supported: ["S256"], registration_endpoint: `${base}/oauth/register`, revocation_endpoint: `${base}/oauth/revoke` });
  });

  it("a suspended person's access token is refused; clients never used are swept after a week, clients in use are kept", async () => {
    const first = await exchange(await code());
    const used = await mcpWith(`${base}/mcp`, first.body.access_token ?? "");
    expect(used.status).toBe(200);
    const loner = await register(base, { client_name: "Never used", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" });
    await server.ctx.oauth.grants.sweep(Date.now() + 8 * 24 * 60 * 60 * 1000);
    const left = await server.ctx.db.selectFrom("oauth_records").select("id").where("model", "=", "Client").where("id", "=", String(loner.body.client_id)).executeTakeFirst();
    expect(left).toBeUndefined();
    expect(loner.body.registration_access_token, "registration management is off: no token for it").toBeUndefined();
    // The client with a grant still redeems its refresh token.
    const refreshed = await token(base, { grant_type: "refresh_token", refresh_token: first.body.refresh_token ?? "", client_id: clientId });
    expect(refreshed.status).toBe(200);
    await server.ctx.suspensions.suspendUser(person.handle, "test", { actor: { kind: "cli" }, ip: null });
    const refused = await mcpWith(`${base}/mcp`, refreshed.body.access_token ?? "");
    expect(refused.status).toBe(401);
    await server.ctx.suspensions.unsuspendUser(person.handle, { actor: { kind: "cli" }, ip: null });
    expect((await mcpWith(`${base}/mcp`, refreshed.body.access_token ?? "")).status).toBe(200);
  });

  it("an access token cannot climb out of a tool's route: call_operation with id '..' reaches no other route and mints nothing", async () => {
    const access = (await exchange(await code())).body.access_token ?? "";
    const tokensBefore = await server.ctx.tokens.listUserTokens(person.id);
    for (const [id, operation] of [["..", "token"], [".", "token"], ["%2e%2e", "token"], ["x/../..", "token"]] as const) {
      const res = await fetch(`${base}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${access}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "call_operation", arguments: { id, operation, input: {} } } }),
      });
      const text = await res.text();
      expect(text, id).not.toContain("svc_user_");
      expect(text, id).toContain('"isError":true');
    }
    expect(await server.ctx.tokens.listUserTokens(person.id)).toEqual(tokensBefore);
  });

  it("two redemptions of one refresh token racing: at most one wins, and the grant dies", async () => {
    const first = await exchange(await code());
    const race = await Promise.all([0, 1].map(() => token(base, { grant_type: "refresh_token", refresh_token: first.body.refresh_token ?? "", client_id: clientId })));
    const winners = race.filter((r) => r.status === 200);
    expect(winners.length).toBeLessThanOrEqual(1);
    expect(race.filter((r) => r.status === 400).map((r) => r.body.error)).toContain("invalid_grant");
    for (const winner of winners) expect((await mcpWith(`${base}/mcp`, winner.body.access_token ?? "")).status).toBe(401);
  });

  it("registration floods from one network stop at 20 an hour, in OAuth's shape, however the path is spelled", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) {
      const path = ["/oauth/register", "/oauth/Register", "/oauth/register/", "/OAUTH/REGISTER"][i % 4] ?? "/oauth/register";
      const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ client_name: `flood ${i}`, redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }) });
      statuses.push(res.status);
    }
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(20);
    const refused = await fetch(`${base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: string }).error).toBe("invalid_request");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("authorizations naming metadata-document clients are limited per network: a stream of fresh URLs is cut off", async () => {
    let refused: Response | null = null;
    for (let i = 0; i < 80 && refused === null; i++) {
      const res = await fetch(`${base}/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: `https://127.0.0.1/${i}.json`, redirect_uri: REDIRECT, scope: "mcp" }).toString()}`, { redirect: "manual" });
      if (res.status === 429) refused = res;
      else await res.arrayBuffer();
    }
    expect(refused?.status).toBe(429);
    expect(((await refused?.json()) as { error: string }).error).toBe("invalid_request");
  });

  it("every authorization is limited per network, a registered client's too: each is a row of its parameters", async () => {
    let refused: Response | null = null;
    for (let i = 0; i < AUTHORIZATIONS_PER_NETWORK.capacity + 1 && refused === null; i++) {
      const query = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: REDIRECT, scope: "mcp", code_challenge: "x".repeat(43), code_challenge_method: "S256", state: "s".repeat(4000) });
      const res = await fetch(`${base}/oauth/authorize?${query.toString()}`, { redirect: "manual" });
      if (res.status === 429) refused = res;
      else await res.arrayBuffer();
    }
    expect(refused?.status).toBe(429);
    expect(((await refused?.json()) as { error: string }).error).toBe("invalid_request");
  });

  it("pushed authorization requests are no endpoint: each had been a stored row of its parameters, outside any allowance", async () => {
    const { challenge } = pkce();
    const body = new URLSearchParams({ client_id: clientId, response_type: "code", redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", scope: "mcp", state: "s".repeat(50_000) });
    const res = await fetch(`${base}/oauth/par`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { kind: string } }).error.kind).toBe("not_found");
    const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(metadata.pushed_authorization_request_endpoint).toBeUndefined();
    expect(await server.ctx.db.selectFrom("oauth_records").select("id").where("model", "=", "PushedAuthorizationRequest").execute()).toEqual([]);
  });

  it("a used refresh token is kept a day (its replay still ends the grant), not its 30 days: every refresh rotates", async () => {
    server.ctx.limiter.reset();
    const first = await exchange(await code());
    const rotated = await token(base, { grant_type: "refresh_token", refresh_token: first.body.refresh_token ?? "", client_id: clientId });
    expect(rotated.status).toBe(200);
    const rows = await server.ctx.db.selectFrom("oauth_records").select(["consumed_at", "expires_at"]).where("model", "=", "RefreshToken").where("consumed_at", "is not", null).execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(Number(row.expires_at) - Number(row.consumed_at)).toBeLessThanOrEqual(CONSUMED_KEPT_MS);
  });

  it("client metadata documents are fetched within the network's allowance from every endpoint, not only authorize", async () => {
    server.ctx.limiter.reset();
    const before = fetched.length;
    const statuses = new Set<number>();
    for (let i = 0; i < METADATA_CLIENTS_PER_NETWORK.capacity + 20; i++) {
      const client = `https://docs.fixture.test:${fixture.port}/counted-${i}.json`;
      const res = await token(base, { grant_type: "refresh_token", refresh_token: "junk", client_id: client });
      statuses.add(res.status);
    }
    expect([...statuses]).toEqual([400]);
    expect(fetched.length - before).toBe(METADATA_CLIENTS_PER_NETWORK.capacity);
  });

  it("token requests are limited per network: each refresh writes a row", async () => {
    server.ctx.limiter.reset();
    let refused: Awaited<ReturnType<typeof token>> | null = null;
    let sent = 0;
    // The bucket refills meanwhile (300 in 10 minutes, one every 2 s): the 301 requests take 2-6 s
    // here, so a few more may pass before the refusal, never many.
    const most = TOKEN_REQUESTS_PER_NETWORK.capacity + 10;
    while (refused === null && sent < most) {
      const res = await token(base, { grant_type: "refresh_token", refresh_token: `junk-${sent}`, client_id: clientId });
      sent += 1;
      if (res.status === 429) refused = res;
    }
    expect(sent).toBeGreaterThan(TOKEN_REQUESTS_PER_NETWORK.capacity);
    expect(refused?.body.error).toBe("invalid_request");
    server.ctx.limiter.reset();
  });
});
