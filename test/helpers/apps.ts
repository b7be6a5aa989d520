import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import type { Plan } from "../../src/errors/index.ts";
import type { ApiResponse } from "./client.ts";
import type { TestServer } from "./server.ts";

/** A module source exporting `manifest` (as JSON, a literal) and a default fetch. */
export function moduleSource(manifest: Record<string, unknown>, extra = ""): string {
  return `export const manifest = ${JSON.stringify(manifest, null, 2)};

export default {
  async fetch(request, env) {
    const op = request.headers.get("x-svc-op");
    return Response.json({ ok: true, value: { op } });
  },
};
${extra}`;
}

/** A small valid manifest with one route per name given. */
export function manifestOf(id: string, ops: string[] = ["hello"], more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    routes: Object.fromEntries(ops.map((op) => [op, { title: `Op ${op}`, access: "read", input: { type: "object" } }])),
    ...more,
  };
}

export interface CreatedApp {
  id: string;
  token: string;
  body: ApiResponse["body"];
}

/** An anonymous create of a fresh app; asserts the 201. */
export async function createAnonymousApp(server: TestServer, manifestId = "hello-app", body: Record<string, unknown> = {}): Promise<CreatedApp> {
  const res = await server.client.post("/app", { module: moduleSource(manifestOf(manifestId)), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, token: res.body.token, body: res.body };
}

/** Expects an error envelope with this status and kind; returns the error object. */
export function expectError(res: ApiResponse, status: number, kind: string): Record<string, unknown> & { kind: string; message: string } {
  expect({ status: res.status, kind: res.body?.error?.kind }, JSON.stringify(res.body)).toEqual({ status, kind });
  expect(res.body.ok).toBe(false);
  return res.body.error;
}

export interface FixtureUser {
  id: string;
  handle: string;
  /** `svc_session=…` ready for a Cookie header. */
  cookie: string;
  token: string;
}

/**
 * A user made through the services rather than /api/auth/signup, whose per-IP limit (5 a minute)
 * would throttle suites that need many users. accounts.test.ts covers the routes themselves.
 * `plan` other than free: a paid account, whose apps run on the claimed lane from the start.
 */
export async function makeUser(server: TestServer, plan?: Plan): Promise<FixtureUser> {
  const handle = `u${randomBytes(5).toString("hex")}`;
  const user = await server.ctx.users.create({ email: `${handle}@example.test`, handle, password: "correct horse battery staple", ...(plan === undefined ? {} : { plan }) });
  const session = await server.ctx.sessions.create(user.id);
  const minted = await server.ctx.tokens.mintUserToken(user.id, {});
  return { id: user.id, handle, cookie: `svc_session=${session}`, token: minted.token };
}
