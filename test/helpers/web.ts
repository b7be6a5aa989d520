import { expect } from "vitest";
import type { TestServer } from "./server.ts";

/** Opens an app's shell as a browser would and returns the query render token of its frame. */
export async function openShell(server: Pick<TestServer, "client">, path: string, cookie?: string): Promise<string> {
  const res = await server.client.get(path, { headers: { accept: "text/html" }, ...(cookie === undefined ? {} : { cookie }) });
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  const match = /\/frame\?t=(svc_render_[A-Za-z0-9]+)/.exec(res.text);
  if (match?.[1] === undefined) throw new Error("the shell has no frame URL with a render token");
  return match[1];
}

/** Loads the frame with a query token and returns the SDK's render token embedded in it. */
export async function openFrame(server: Pick<TestServer, "client">, appId: string, queryToken: string): Promise<string> {
  const res = await server.client.get(`/app/${appId}/frame?t=${queryToken}`);
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  const match = /"token":"(svc_render_[A-Za-z0-9]+)"/.exec(res.text);
  if (match?.[1] === undefined) throw new Error("the frame embeds no render token");
  return match[1];
}

/** A render token for an unclaimed app of any server by origin, as a browser gets one: shell, then frame. */
export async function renderTokenAt(base: string, appId: string): Promise<string> {
  const shell = await (await fetch(`${base}/app/${appId}`, { headers: { accept: "text/html" } })).text();
  const query = /\/frame\?t=(svc_render_[A-Za-z0-9]+)/.exec(shell)?.[1];
  if (query === undefined) throw new Error("the shell has no frame URL with a render token");
  const frame = await (await fetch(`${base}/app/${appId}/frame?t=${query}`)).text();
  const token = /"token":"(svc_render_[A-Za-z0-9]+)"/.exec(frame)?.[1];
  if (token === undefined) throw new Error("the frame embeds no render token");
  return token;
}
