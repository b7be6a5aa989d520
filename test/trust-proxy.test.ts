import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.ts";
import { forwardedFor } from "../src/http/proxy.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// Behind a load balancer every request comes from the balancer's address. Only with TRUST_PROXY
// does X-Forwarded-For (or Forwarded) name the client, so per-address limits count real clients;
// without it, a client cannot pick its own bucket by sending the header.

/** Failed sign-ins from `headers` until the per-address bucket (10 a minute) refuses: how many. */
async function loginsUntilRefused(server: TestServer, headers: Record<string, string>): Promise<number> {
  for (let i = 1; i <= 15; i++) {
    // A different account each time, so only the per-address bucket can refuse.
    const login = `nobody-${randomBytes(4).toString("hex")}`;
    const res = await fetch(`${server.url}/api/auth/login`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ login, password: "wrong password" }) });
    if (res.status === 429) {
      expect(((await res.json()) as { error: { kind: string } }).error.kind).toBe("rate_limited");
      return i;
    }
    expect(res.status).toBe(401);
  }
  return Infinity;
}

describe("TRUST_PROXY set to the balancer's address", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { TRUST_PROXY: "127.0.0.1, ::1" } });
  });
  afterAll(async () => server.close());

  it("counts each real client in its own bucket, from X-Forwarded-For or Forwarded", async () => {
    expect(await loginsUntilRefused(server, { "x-forwarded-for": "203.0.113.1" })).toBe(11);
    // Another client behind the same balancer still has its whole bucket…
    expect(await loginsUntilRefused(server, { "x-forwarded-for": "203.0.113.2" })).toBe(11);
    // …and so does one named by the standard header, port and quotes and all.
    expect(await loginsUntilRefused(server, { forwarded: 'for="203.0.113.3:4711";proto=https' })).toBe(11);
    // A client that prepends its own X-Forwarded-For is still known by what the balancer added.
    expect(await loginsUntilRefused(server, { "x-forwarded-for": "198.51.100.9, 203.0.113.1" })).toBe(1);
  });
});

describe("TRUST_PROXY unset", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.close());

  it("ignores X-Forwarded-For: every request counts against the socket's address", async () => {
    expect(await loginsUntilRefused(server, { "x-forwarded-for": "203.0.113.1" })).toBe(11);
    expect(await loginsUntilRefused(server, { "x-forwarded-for": "203.0.113.2" })).toBe(1);
  });
});

describe("TRUST_PROXY naming another network", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { TRUST_PROXY: "10.0.0.0/8" } });
  });
  afterAll(async () => server.close());

  it("does not believe a header from an address outside it", async () => {
    expect(await loginsUntilRefused(server, { "x-forwarded-for": "203.0.113.1" })).toBe(11);
    expect(await loginsUntilRefused(server, { forwarded: "for=203.0.113.2" })).toBe(1);
  });
});

it("TRUST_PROXY is a hop count or addresses and CIDRs; anything else stops the start", () => {
  expect(loadConfig({ TRUST_PROXY: "2" }).trustProxy).toBe(2);
  expect(loadConfig({ TRUST_PROXY: "10.0.0.0/8, 192.168.1.7, fd00::/8" }).trustProxy).toEqual(["10.0.0.0/8", "192.168.1.7", "fd00::/8"]);
  expect(loadConfig({}).trustProxy).toBe(false);
  for (const bad of ["yes", "10.0.0.0/33", "0", "example.com", "10.0.0.1/8/8"]) expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(/TRUST_PROXY/);
});

it("reads the for= addresses of a Forwarded header", () => {
  expect(forwardedFor('for=192.0.2.43, for="[2001:db8:cafe::17]:4711";proto=https, for=unknown, for=_hidden, by=203.0.113.60')).toEqual(["192.0.2.43", "2001:db8:cafe::17"]);
  expect(forwardedFor('For="192.0.2.60:4711"')).toEqual(["192.0.2.60"]);
});
