import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, type FixtureUser } from "../helpers/apps.ts";
import { describeEachDialect } from "../helpers/dialects.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const source = (id: string) => `const manifest = { id: ${JSON.stringify(id)}, routes: { peek: { access: "read" } } };
export { manifest };
export default { async fetch(request, env) { return Response.json({ ok: true, value: { secret: env.API_KEY ?? null } }); } };
`;

/** Copies and versions, attacked: borrowed idempotency keys, hostile names, secrets that must not travel. */
describeEachDialect("hostile: copies and versions", (dialect) => {
  let server: TestServer;
  let alice: FixtureUser;
  let mallory: FixtureUser;
  let appId: string;

  beforeAll(async () => {
    server = await startServer({ dialect });
    [alice, mallory] = [await makeUser(server), await makeUser(server)];
    appId = (await server.client.post("/app", { module: source("vault") }, { token: alice.token })).body.id;
    await server.client.put(`/app/${appId}/secrets/API_KEY`, { value: "alice-only" }, { token: alice.token });
  });
  afterAll(async () => server.close());

  it("an idempotency key is the caller's own: someone else's key never answers with their copy", async () => {
    const mine = await server.client.post(`/app/${appId}/copy`, { manifest_id: "vault-copy", idempotency_key: "shared-key" }, { token: alice.token });
    expect(mine.status).toBe(200);
    // Mallory guesses the key: the private source stays closed to her.
    expectError(await server.client.post(`/app/${appId}/copy`, { manifest_id: "vault-copy", idempotency_key: "shared-key" }, { token: mallory.token }), 403, "forbidden");
    await server.client.put(`/app/${appId}/visibility`, { visibility: "public" }, { token: alice.token });
    await server.client.put(`/app/${appId}/remixable`, { remixable: true }, { token: alice.token });
    const hers = await server.client.post(`/app/${appId}/copy`, { manifest_id: "vault-copy", idempotency_key: "shared-key" }, { token: mallory.token });
    expect(hers.status).toBe(200);
    expect(hers.body.id).not.toBe(mine.body.id);
    expect(hers.body.url).toContain(`/@${mallory.handle}/`);
    // Secrets never travel, and their names reach only those who manage the source.
    expect(hers.body).not.toHaveProperty("secretsNotCopied");
    expect((await server.client.post(`/app/${hers.body.id}/api/peek`, {}, { token: mallory.token })).body.value).toEqual({ secret: null });
    expect((await server.client.post(`/app/${mine.body.id}/api/peek`, {}, { token: alice.token })).body.value).toEqual({ secret: null });
    // Nor can the copy read versions of its source.
    expectError(await server.client.get(`/app/${appId}/versions`, { token: mallory.token }), 403, "forbidden");
    expectError(await server.client.post(`/app/${appId}/versions/1/restore`, {}, { token: mallory.token, headers: { "if-match": '"1"' } }), 403, "forbidden");
  });

  // Secrets are kept per (owner, manifest id): what a deleted app held must not pass to the next
  // code under its name, here a stranger's, copied in by its victim.
  it("a stranger's app copied under a deleted app's manifest id reads none of that app's secrets", async () => {
    const deleted = (await server.client.post("/app", { module: source("wallet") }, { token: alice.token })).body.id as string;
    expect((await server.client.put(`/app/${deleted}/secrets/API_KEY`, { value: "alice-wallet-key" }, { token: alice.token })).status).toBe(200);
    expect((await server.client.delete(`/app/${deleted}`, { token: alice.token })).status).toBe(200);
    const bait = (await server.client.post("/app", { module: source("wallet") }, { token: mallory.token })).body.id as string;
    await server.client.put(`/app/${bait}/visibility`, { visibility: "public" }, { token: mallory.token });
    await server.client.put(`/app/${bait}/remixable`, { remixable: true }, { token: mallory.token });
    const copied = await server.client.post(`/app/${bait}/copy`, {}, { token: alice.token });
    expect(copied.status, JSON.stringify(copied.body)).toBe(200);
    expect(copied.body.manifestId).toBe("wallet");
    expect((await server.client.post(`/app/${copied.body.id}/api/peek`, {}, { token: alice.token })).body.value).toEqual({ secret: null });
    expect((await server.client.get(`/app/${copied.body.id}/secrets`, { token: alice.token })).body.names).toEqual([]);
  });

  it("hostile display names become inert string literals; hostile manifest ids are refused", async () => {
    const names = ['"; globalThis.pwned = 1; "', "line\nbreak", "*/ /*", "\u2028\u2029", "${process.exit()}", "</script><script>alert(1)</script>", "\\u0022"];
    for (const [i, name] of names.entries()) {
      const made = await server.client.post(`/app/${appId}/copy`, { manifest_id: `named-${i}`, display_name: name }, { token: alice.token });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      expect(made.body.displayName).toBe(name);
      const described = await server.client.get(`/app/${made.body.id}/source`, { token: alice.token });
      // The manifest had no displayName: it goes in first, as a JSON string literal.
      expect(described.body.module).toContain(`{ displayName: ${JSON.stringify(name)}, id: "named-${i}", routes:`);
      expect((await server.client.post(`/app/${made.body.id}/api/peek`, {}, { token: alice.token })).status).toBe(200);
    }
    expectError(await server.client.post(`/app/${appId}/copy`, { display_name: "a\u0000b", manifest_id: "nul" }, { token: alice.token }), 400, "invalid_request");
    for (const id of ['a", evil: "x', "../up", "UPPER", "x".repeat(65), "-lead", ""]) {
      expectError(await server.client.post(`/app/${appId}/copy`, { manifest_id: id }, { token: alice.token }), 400, "invalid_request");
    }
    expectError(await server.client.post(`/app/${appId}/copy`, { manifest_id: "long-name", display_name: "n".repeat(101) }, { token: alice.token }), 400, "invalid_request");
  });
});
