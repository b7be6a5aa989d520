import { expect } from "vitest";
import type { TestDns } from "./dns-server.ts";
import type { TestServer } from "./server.ts";

/** Puts a person on the pro plan, where custom domains are (DECISIONS §12). */
export async function makePro(server: Pick<TestServer, "ctx">, userId: string): Promise<void> {
  await server.ctx.db.updateTable("users").set({ plan: "pro" }).where("id", "=", userId).execute();
}

/** Makes an app public: a custom domain's visitors open it without an account. */
export async function makePublic(server: Pick<TestServer, "client">, token: string, appId: string): Promise<void> {
  expect((await server.client.put(`/app/${appId}/visibility`, { visibility: "public" }, { token })).status).toBe(200);
}

/**
 * What an owner does to serve an app at `hostname`: adds it, creates the TXT record it names at
 * their DNS provider (`dns`), verifies; then the instance's host map is reloaded. Returns the domain's id.
 */
export async function serveAt(server: Pick<TestServer, "client" | "ctx">, dns: TestDns, token: string, appId: string, hostname: string): Promise<string> {
  const added = await server.client.post(`/api/v1/apps/${appId}/domains`, { hostname }, { token });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  dns.setTxt(`_svc-verify.${hostname}`, [added.body.domain.verification.value]);
  const verified = await server.client.post(`/api/v1/apps/${appId}/domains/${added.body.domain.id}/verify`, {}, { token });
  expect(verified.body.domain.state).toBe("verified");
  await server.ctx.domainHosts.reload();
  return added.body.domain.id as string;
}
