import type { TestServer } from "./server.ts";

/** The smallest bytes a PNG check accepts: the signature and some body. */
export const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(56, 1)]);

/** Uploads a listing image as a multipart form, as the console or an agent would. */
export async function uploadMedia(server: TestServer, appId: string, token: string, fields: Record<string, string>, file: { data: Buffer; type: string; name: string }) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set("file", new Blob([file.data], { type: file.type }), file.name);
  const res = await fetch(`${server.url}/api/v1/apps/${appId}/template-listing/media`, { method: "POST", body: form, headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text), text };
}
