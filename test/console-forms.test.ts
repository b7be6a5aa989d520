import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeUser, manifestOf, moduleSource, type FixtureUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/**
 * Issue 19: every form the pages post to refuses a cross-origin POST with 403 `forbidden`, even
 * with a valid session, before anything is done. The forms are found in the OpenAPI document
 * (tag `pages`), so a form added later is held to this too.
 */
describe("pages: every form refuses a cross-origin post", () => {
  let server: TestServer;
  let user: FixtureUser;
  let appId: string;
  beforeAll(async () => {
    server = await startServer();
    user = await makeUser(server);
    appId = (await server.client.post("/app", { module: moduleSource(manifestOf("forms-target")) }, { token: user.token })).body.id;
  });
  afterAll(async () => server.close());

  it("403 forbidden from a foreign Origin on each page POST, and the app untouched", async () => {
    const doc = (await server.client.get("/.well-known/openapi.json")).body as { paths: Record<string, Record<string, { tags?: string[] }>> };
    const forms = Object.entries(doc.paths)
      .filter(([, ops]) => ops.post?.tags?.includes("pages"))
      .map(([path]) => path.replace("{id}", appId).replace(/\{[^}]+\}/g, "x"));
    expect(forms.length).toBeGreaterThanOrEqual(20);
    expect(forms).toEqual(expect.arrayContaining(["/sign-up", "/sign-out", `/apps/${appId}/delete`, `/apps/${appId}/secrets`, "/account/tokens"]));
    for (const path of forms) {
      const res = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { cookie: user.cookie, origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: "confirm=forms-target&name=X&value=y&visibility=public",
      });
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as { error: { kind: string } }).error.kind, path).toBe("forbidden");
    }
    expect((await server.client.get(`/app/${appId}/source`, { token: user.token })).status).toBe(200);
    expect((await server.ctx.apps.get(appId))?.visibility).toBe("private");
  });

  it("bad values in a form are refused: a restore's revision that is no number (400), an operation's input nested past the API's bound", async () => {
    const post = async (path: string, body: string) => {
      const res = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { cookie: user.cookie, origin: server.url, "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body,
      });
      const text = await res.text();
      return [res.status, text.startsWith("{") ? (JSON.parse(text) as { error?: { kind: string } }).error?.kind : text] as const;
    };
    // It was read as NaN and answered 412 invalid_if_match, though no If-Match was sent.
    for (const expected of ["abc", "", "1e3", "-1"]) expect(await post(`/apps/${appId}/versions/1/restore`, `expected=${expected}`), expected).toEqual([400, "invalid_request"]);
    // The operations page shows a call's refusal in the page: here the API's, before the op runs.
    const deep = "[".repeat(100) + "]".repeat(100);
    const [status, page] = await post(`/apps/${appId}/operations/hello`, `input=${encodeURIComponent(deep)}`);
    expect(status).toBe(200);
    expect(page).toContain("nests objects and arrays deeper than 64 levels");
  });

  it("a form past 16 KiB is refused naming the form's cap, and its size when sent in chunks as at least that", async () => {
    const post = async (body: string | ReadableStream<Uint8Array>) => {
      const res = await fetch(`${server.url}/apps/${appId}/secrets`, {
        method: "POST",
        headers: { cookie: user.cookie, origin: server.url, "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body,
        ...(typeof body === "string" ? {} : { duplex: "half" }),
      });
      return [res.status, (await res.json()) as { error: { kind: string; message: string; recovery: unknown } }] as const;
    };
    const big = `name=X&value=${"v".repeat(20 * 1024)}`;
    const [status, { error }] = await post(big);
    expect(status).toBe(413);
    expect(error).toMatchObject({ kind: "payload_too_large", recovery: { kind: "shrink", field: "payload", size_bytes: big.length, cap_bytes: 16 * 1024 } });
    expect(error.message).toBe(`the request body is ${big.length} bytes, larger than this route's 16384-byte cap`);
    // No Content-Length: the body is cut off once past the cap, so that much is all it is known to be.
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("v".repeat(1024)));
        controller.close();
      },
    });
    const [chunkedStatus, chunkedBody] = await post(chunked);
    expect(chunkedStatus).toBe(413);
    expect(chunkedBody.error.recovery).toMatchObject({ size_bytes: 16 * 1024 + 1, cap_bytes: 16 * 1024, instructions: expect.stringContaining("at least 16385 bytes") });
  });

  it("no console page carries a token: only the one-time reveals do", async () => {
    // The person has tokens, an app token exists, a webhook has a secret: none of them may show.
    await server.client.post("/app", { module: moduleSource(manifestOf("anon-one")) });
    await server.client.post(`/api/v1/apps/${appId}/webhooks`, { op: "hello" }, { token: user.token });
    const doc = (await server.client.get("/.well-known/openapi.json")).body as { paths: Record<string, Record<string, { tags?: string[] }>> };
    const pages = Object.entries(doc.paths)
      .filter(([path, ops]) => ops.get?.tags?.includes("pages") && /^\/($|apps\/|account|builds\/|sign-|docs\/|mcp\/setup)/.test(path))
      .map(([path]) => path.replace("{id}", appId).replace(/\{[^}]+\}/g, "x"));
    expect(pages).toEqual(expect.arrayContaining(["/", `/apps/${appId}`, `/apps/${appId}/webhooks`, `/apps/${appId}/secrets`, "/account"]));
    for (const path of pages) {
      const res = await fetch(`${server.url}${path}`, { headers: { cookie: user.cookie, accept: "text/html" } });
      // An event stream never ends: what it has sent so far (its hello) is what is checked.
      const text = res.headers.get("content-type")?.startsWith("text/event-stream") === true ? await firstChunk(res) : await res.text();
      expect(text, path).not.toMatch(/svc_(user|app|render|hook)_[0-9A-Za-z]{8}/);
    }
  });
});

async function firstChunk(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  const chunk = await reader?.read();
  await reader?.cancel();
  return new TextDecoder().decode(chunk?.value);
}
