import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

const from = (address: string, headers: Record<string, string> = {}) => ({ headers: { "x-forwarded-for": address, ...headers } });
/** Address `i` of one IPv6 /64, and of another. */
const inNet = (i: number) => `2001:db8:7:7::${(i + 1).toString(16)}`;
const elsewhere = "2001:db8:7:8::1";

/**
 * Every per-address limit counts an IPv6 client by its /64 (auth.ts clientNetwork): one client
 * holds billions of addresses, and counted one by one they escaped every limit but anonymous
 * creates and OAuth registrations. Another address of the same /64 is refused once the first has
 * used the bucket up; an address of another /64 is not.
 */
describe("per-address limits count an IPv6 client's /64", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { TRUST_PROXY: "1" } });
  });
  afterAll(async () => server.close());

  it("pairing starts: 30 a minute for the whole /64", async () => {
    for (let i = 0; i < 30; i++) expect((await server.client.post("/api/pair/start", {}, from(inNet(i % 3)))).status).toBe(200);
    expectError(await server.client.post("/api/pair/start", {}, from(inNet(9))), 429, "rate_limited");
    expect((await server.client.post("/api/pair/start", {}, from(elsewhere))).status).toBe(200);
  });

  it("sign-ups: 5 a minute for the whole /64", async () => {
    const signup = (n: number, address: string) => {
      const handle = `net${Date.now().toString(36)}${n}`;
      return server.client.post("/api/auth/signup", { email: `${handle}@example.test`, handle, password: "correct horse battery staple" }, from(address));
    };
    for (let i = 0; i < 5; i++) expect((await signup(i, inNet(20 + i))).status).toBe(201);
    expectError(await signup(5, inNet(30)), 429, "rate_limited");
    expect((await signup(6, elsewhere)).status).toBe(201);
  });

  it("the sign-up form counts the /64 in the JSON sign-up's bucket", async () => {
    const form = (n: number, address: string) => {
      const handle = `form${Date.now().toString(36)}${n}`;
      const raw = new URLSearchParams({ email: `${handle}@example.test`, handle, password: "correct horse battery staple" }).toString();
      return server.client.request("POST", "/sign-up", undefined, { raw, ...from(address, { "content-type": "application/x-www-form-urlencoded", origin: server.config.baseUrl }) });
    };
    const net = (i: number) => `2001:db8:9:9::${(i + 1).toString(16)}`;
    for (let i = 0; i < 5; i++) expect((await form(i, net(i))).status).toBe(303);
    expect((await form(5, net(7))).status).toBe(429);
  });

  it("sign-in guesses at one account count together, whether it is named by its handle or its email", async () => {
    const handle = `acct${Date.now().toString(36)}`;
    expect((await server.client.post("/api/auth/signup", { email: `${handle}@example.test`, handle, password: "correct horse battery staple" }, from("198.51.100.1"))).status).toBe(201);
    // Each guess from a network of its own, so only the account's bucket (10 a minute) counts them.
    const guess = (login: string, n: number) => server.client.post("/api/auth/login", { login, password: "wrong guess" }, from(`203.0.113.${n}`));
    for (let n = 0; n < 10; n++) expect((await guess(n % 2 === 0 ? handle : `${handle.toUpperCase()}@EXAMPLE.TEST`, n)).status).toBe(401);
    expectError(await guess(`${handle}@example.test`, 50), 429, "rate_limited");
    expectError(await guess(handle, 51), 429, "rate_limited");
  });

  it("abuse reports: 5 an hour for the whole /64", async () => {
    const app = await server.client.post("/app", { module: `export const manifest = { id: "reported", routes: { a: { access: "read" } } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };` }, from("192.0.2.50"));
    expect(app.status).toBe(201);
    const report = (address: string) => server.client.post(`/app/${app.body.id}/report`, { reason: "spam", details: "d" }, from(address, { origin: server.config.baseUrl }));
    for (let i = 0; i < 5; i++) expect((await report(inNet(40 + i))).status).toBe(201);
    expectError(await report(inNet(50)), 429, "rate_limited");
    expect((await report(elsewhere)).status).toBe(201);
  });
});
