import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { callAsOwner, createOwnedApp } from "./helpers/automation.ts";
import { expectError, makeUser, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");

describeEachDialect("webhooks with real-world payloads", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startServer({ dialect, queryLog: (event) => statements.push(event.query.sql) });
    owner = await makeUser(server);
  });
  afterAll(async () => server.close());

  it("stores a GitHub push (secret in ?key=) and a Stripe event (Bearer) through the delivery URL and reads them back", async () => {
    const appId = await createOwnedApp(server, owner.token, "event-sink");
    const created = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "ingest", name: "GitHub and Stripe" }, { token: owner.token });
    expect(created.status).toBe(201);
    const hook = created.body.webhook;
    expect(hook.target).toEqual({ op: "ingest", input_schema: { type: "object", minProperties: 1 }, output_schema: { type: "object", required: ["key"] } });

    // GitHub cannot send a bearer header, so its payload URL carries ?key=; it posts the raw event bytes.
    const github = fixture("github-push.json");
    const pushed = await server.client.post(`/api/v1/hooks/${hook.id}?key=${hook.secret}`, undefined, {
      raw: github,
      headers: { "content-type": "application/json", "x-github-event": "push", "user-agent": "GitHub-Hookshot/abc1234" },
    });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(200);
    const githubKey = "github:Codertocat/Hello-World:6113728f27ae82c7b1a177c8d03f9e96e0adf246";
    expect(pushed.body).toEqual({ ok: true, value: { key: githubKey } });

    const stripe = fixture("stripe-payment-intent-succeeded.json");
    const paid = await server.client.post(`/api/v1/hooks/${hook.id}`, undefined, {
      raw: stripe,
      token: hook.secret,
      headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": "t=1680064028,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd" },
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.value).toEqual({ key: "stripe:evt_3MtwBwLkdIwHu7ix28a3tqPa" });

    // Read back through the app's own op: byte-for-byte the same JSON, unicode and all.
    expect(await callAsOwner(server, owner.token, appId, "read", { key: githubKey })).toEqual(JSON.parse(github));
    expect(await callAsOwner(server, owner.token, appId, "read", { key: "stripe:evt_3MtwBwLkdIwHu7ix28a3tqPa" })).toEqual(JSON.parse(stripe));

    const log = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries`, { token: owner.token })).body.deliveries;
    expect(log.map((r: { status: number; outcome: string }) => `${r.status} ${r.outcome}`)).toEqual(["200 success", "200 success"]);
    expect(log[1]).toMatchObject({ requestBytes: Buffer.byteLength(github), requestBody: github, requestTruncated: false });
    expect(log[0]).toMatchObject({ requestBytes: Buffer.byteLength(stripe), requestBody: stripe });
    expect(JSON.parse(log[1].responseBody)).toEqual({ ok: true, value: { key: githubKey } });
  });

  it("a request without the secret keeps 512 bytes of its body in the record, one with it the plan's 16 KiB", async () => {
    const appId = await createOwnedApp(server, owner.token, "guarded-sink");
    const hook = (await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "ingest" }, { token: owner.token })).body.webhook as { id: string; secret: string };
    const event = { object: "event", id: "evt_big", padding: "x".repeat(10_000) };
    expectError(await server.client.post(`/api/v1/hooks/${hook.id}`, event, { token: "svc_hook_wrong" }), 401, "unauthorized");
    expectError(await server.client.post(`/api/v1/hooks/${hook.id}`, event), 401, "unauthorized");
    expect((await server.client.post(`/api/v1/hooks/${hook.id}`, event, { token: hook.secret })).status).toBe(200);
    const records = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries`, { token: owner.token })).body.deliveries as {
      status: number;
      requestBytes: number;
      requestBody: string;
      requestTruncated: boolean;
    }[];
    const sent = JSON.stringify(event);
    expect(records.map((r) => [r.status, r.requestBytes, r.requestTruncated])).toEqual([
      [200, sent.length, false],
      [401, sent.length, true],
      [401, sent.length, true],
    ]);
    expect(records[0]?.requestBody).toBe(sent);
    for (const refused of records.slice(1)) {
      expect(sent.startsWith(refused.requestBody)).toBe(true);
      expect(Buffer.byteLength(refused.requestBody)).toBeLessThanOrEqual(512);
      expect(Buffer.byteLength(refused.requestBody)).toBeGreaterThan(400);
    }
  });

  it("a Content-Type no parser reads, or ?key= sent twice, is still a recorded delivery (delivery rule 5)", async () => {
    const appId = await createOwnedApp(server, owner.token, "odd-senders");
    const hook = (await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "ingest" }, { token: owner.token })).body.webhook as { id: string; secret: string };
    const odd = await server.client.post(`/api/v1/hooks/${hook.id}`, undefined, { raw: JSON.stringify({ object: "event", id: "evt_odd" }), token: hook.secret, headers: { "content-type": "(((" } });
    expect(odd.status, JSON.stringify(odd.body)).toBe(200);
    expect(await callAsOwner(server, owner.token, appId, "read", { key: "stripe:evt_odd" })).toEqual({ object: "event", id: "evt_odd" });
    const twice = await server.client.post(`/api/v1/hooks/${hook.id}?key=${hook.secret}&key=${hook.secret}`, { object: "event" });
    expect(expectError(twice, 400, "invalid_request").message).toContain("more than once");
    const records = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries`, { token: owner.token })).body.deliveries as { status: number; refusal?: string }[];
    expect(records.map((r) => [r.status, r.refusal ?? null])).toEqual([
      [400, "invalid_request"],
      [200, null],
    ]);
  });

  it("parallel deliveries are each recorded once, committed together, with the webhook's outcome", async () => {
    const appId = await createOwnedApp(server, owner.token, "parallel-sink");
    const made = await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "ingest" }, { token: owner.token });
    expect(made.status).toBe(201);
    const hook = made.body.webhook as { id: string; secret: string };
    statements.length = 0;
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => server.client.post(`/api/v1/hooks/${hook.id}`, { object: "event", id: `evt_${i}` }, { token: hook.secret })));
    expect(answers.map((res) => res.status)).toEqual(Array(24).fill(200));
    expect(await callAsOwner(server, owner.token, appId, "read", { key: "stripe:evt_23" })).toEqual({ object: "event", id: "evt_23" });
    const records = (await server.client.get(`/api/v1/webhooks/${hook.id}/deliveries?limit=100`, { token: owner.token })).body.deliveries as { status: number }[];
    expect(records.map((r) => r.status)).toEqual(Array(24).fill(200));
    const listed = (await server.client.get("/api/v1/webhooks", { token: owner.token })).body.webhooks.find((w: { id: string }) => w.id === hook.id);
    expect(listed).toMatchObject({ last_outcome: expect.stringMatching(/^(success|deferred)$/), consecutive_failures: 0 });
    // SQLite has one writer and pays an fsync per commit: records queued behind a commit share the next one.
    if (dialect === "sqlite") expect(Math.max(...recordsPerTransaction(statements))).toBeGreaterThan(1);
  });
});

/** How many delivery records each transaction in a statement log inserted (SQLite: one connection, so statements never interleave). */
function recordsPerTransaction(statements: readonly string[]): number[] {
  const counts: number[] = [];
  let open = false;
  for (const sql of statements) {
    if (/^begin/i.test(sql)) {
      open = true;
      counts.push(0);
    } else if (/^(commit|rollback)/i.test(sql)) open = false;
    else if (open && sql.startsWith('insert into "webhook_deliveries"')) counts[counts.length - 1] = (counts.at(-1) ?? 0) + 1;
  }
  return counts;
}
