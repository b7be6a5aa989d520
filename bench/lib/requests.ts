// The benchmarks' own requests outside the measured load (setup, and the rows timed one call at
// a time): JSON in, JSON out, with a bearer token or none.
import { request } from "undici";

export async function call(url: string, method: string, token: string | null, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(url, {
    method: method as "POST",
    headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}

/** How long one op call at `url` took, in ms; it must answer `revision` (the code it ran). */
export async function timedCall(url: string, token: string | null, revision: number): Promise<number> {
  const start = performance.now();
  const answer = await call(url, "POST", token, {});
  const ms = performance.now() - start;
  if (answer.json.value !== revision) throw new Error(`a call of revision ${revision} at ${url} answered ${JSON.stringify(answer.json)}`);
  return ms;
}
