import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import type { TestServer } from "./server.ts";

export interface TestUser {
  id: string;
  handle: string;
  email: string;
  password: string;
  /** `svc_session=…` ready for a Cookie header. */
  cookie: string;
  /** A fresh 7-day user token. */
  token: string;
}

/** Signs up a new user through the real routes and mints a token for them. */
export async function createUser(server: TestServer, handle = `u${randomBytes(5).toString("hex")}`): Promise<TestUser> {
  const password = "correct horse battery staple";
  const email = `${handle}@example.test`;
  const signup = await server.client.post("/api/auth/signup", { email, handle, password });
  expect(signup.status, JSON.stringify(signup.body)).toBe(201);
  const setCookie = signup.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0] ?? "";
  const minted = await server.client.post("/api/token", {}, { cookie, headers: { origin: server.config.baseUrl } });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  return { id: signup.body.user.id, handle, email, password, cookie, token: minted.body.token };
}
