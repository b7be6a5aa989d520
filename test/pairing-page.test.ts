import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { MINUTE, SECOND } from "../src/config/clock.ts";
import { createUser, type TestUser } from "./helpers/accounts.ts";
import type { ApiResponse } from "./helpers/client.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { manualClock, poll, startPairing } from "./helpers/pairing.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

describeEachDialect("device pairing: the approval page", (dialect) => {
  let server: TestServer;
  let alice: TestUser;
  const form = (path: string, fields: Record<string, string>, options: { cookie?: string; origin?: string | null } = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
    if (options.origin !== null) headers.origin = options.origin ?? server.config.baseUrl;
    return server.client.request("POST", path, undefined, { raw: new URLSearchParams(fields).toString(), cookie: options.cookie, headers });
  };
  const page = (path: string, cookie?: string) => server.client.get(path, { cookie });

  beforeAll(async () => {
    server = await startServer({ dialect, clock: "manual" });
    alice = await createUser(server);
  });
  afterAll(async () => server.close());
  beforeEach(() => server.ctx.limiter.reset());

  it("offers sign-in to a visitor, keeping the code to come back to, with no script and no framing", async () => {
    const res = await page("/pair?code=SVC-ABCDEF");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.text).toContain('<form method="post" action="/sign-in">');
    expect(res.text).toContain('name="return_to" value="/pair?code=SVC-ABCDEF"');
    expect(res.text).not.toContain("<script");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("same-origin");
  });

  it("signs in through the form and redirects back, only within the site", async () => {
    const wrong = await form("/sign-in", { login: alice.handle, password: "nope nope", return_to: "/pair?code=SVC-ABCDEF" });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain("Wrong login or password.");
    expect(wrong.text).toContain(`value="${alice.handle}"`);

    const right = await form("/sign-in", { login: alice.handle, password: alice.password, return_to: "/pair?code=SVC-ABCDEF" });
    expect(right.status).toBe(303);
    expect(right.headers.get("location")).toBe("/pair?code=SVC-ABCDEF");
    const cookie = (right.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    expect((await server.client.get("/api/me", { cookie })).body.user.id).toBe(alice.id);

    for (const away of ["//evil.example/x", "https://evil.example/", "/\\evil.example", "pair"]) {
      const res = await form("/sign-in", { login: alice.handle, password: alice.password, return_to: away });
      expect(res.headers.get("location"), away).toBe("/pair");
    }
  });

  it("refuses form posts without our Origin (403) and form bodies on the JSON API (400)", async () => {
    const crossSite = await form("/sign-in", { login: alice.handle, password: alice.password }, { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(crossSite.text).toContain("Origin mismatch");
    const none = await form("/pair", { user_code: "SVC-ABCDEF", decision: "approve" }, { cookie: alice.cookie, origin: null });
    expect(none.status).toBe(403);

    const json = await form("/api/pair/approve", { user_code: "SVC-ABCDEF" }, { cookie: alice.cookie });
    expect(json.status).toBe(400);
    expect(json.body.error.kind).toBe("invalid_request");
  });

  it("shows the label (escaped) and the code, and approves only on the button", async () => {
    const label = `<img src=x onerror="alert(1)"> & friends`;
    const started = await startPairing(server, label);
    const shown = await page(`/pair?code=${started.user_code.toLowerCase()}`, alice.cookie);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; friends");
    expect(shown.text).not.toContain("<img");
    expect(shown.text).toContain(`<p class="code" aria-describedby="compare">${started.user_code}</p>`);
    expect(shown.text).toContain('value="approve">Approve</button>');
    expect(shown.text).toContain('value="deny">Deny</button>');
    expect(shown.text).toContain(`Signed in as @${alice.handle}`);
    manualClock(server).advance(5 * SECOND);
    expect((await poll(server, started.device_code)).body.status).toBe("pending");

    const decided = await form("/pair", { user_code: started.user_code, decision: "approve" }, { cookie: alice.cookie });
    expect(decided.status).toBe(200);
    expect(decided.text).toContain("Access approved");
    const got = await poll(server, started.device_code);
    expect(got.body.status).toBe("approved");

    const again = await form("/pair", { user_code: started.user_code, decision: "deny" }, { cookie: alice.cookie });
    expect(again.status).toBe(409);
    expect(again.text).toContain("already approved");
  });

  it("denies from the page", async () => {
    const started = await startPairing(server, "deny me");
    const decided = await form("/pair", { user_code: started.user_code, decision: "deny" }, { cookie: alice.cookie });
    expect(decided.status).toBe(200);
    expect(decided.text).toContain("Access denied");
    expect((await poll(server, started.device_code)).body.status).toBe("denied");
  });

  it("explains unknown and expired codes, and locks out after 5 wrong ones", async () => {
    const user = await createUser(server);
    const old = await startPairing(server);
    manualClock(server).advance(10 * MINUTE);
    const expired = await page(`/pair?code=${old.user_code}`, user.cookie);
    expect(expired.status).toBe(410);
    expect(expired.text).toContain("expired");

    for (let i = 0; i < 5; i++) {
      const unknown = await page("/pair?code=SVC-ZZZZZZ", user.cookie);
      expect(unknown.status).toBe(404);
      expect(unknown.text).toContain('value="SVC-ZZZZZZ"');
      expect(unknown.text).toContain('role="alert"');
    }
    const fresh = await startPairing(server);
    const locked = await page(`/pair?code=${fresh.user_code}`, user.cookie);
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBe("600");
    expect(locked.headers.get("ratelimit-reset")).toBe("600");
    expect(locked.text).toContain("Too many attempts");
    const viaApi = await server.client.post("/api/pair/approve", { user_code: fresh.user_code }, { token: user.token });
    expect(viaApi.status).toBe(429);
    expect(viaApi.body.error.kind).toBe("rate_limited");
  });

  it("answers a malformed form with a 400 page", async () => {
    const res = await form("/pair", { user_code: "SVC-ABCDEF", decision: "maybe" }, { cookie: alice.cookie });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const anonymous = await form("/pair", { user_code: "SVC-ABCDEF", decision: "approve" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).toContain("Please sign in");
  });
});
