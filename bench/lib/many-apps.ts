// Rows about many apps and new revisions, as a host of agents' apps sees them: thousands of apps
// called with skewed popularity (most calls to a few, the rest spread over a long tail whose
// isolates come and go), and an agent's publish followed by its call.
import type { Row, Target } from "./measure.ts";
import { percentile } from "./measure.ts";
import { call, timedCall } from "./requests.ts";
import type { Brickyard } from "./servers.ts";

export const ZIPF_APPS = 5000;
export const ZIPF_S = 1.1;

/** Creates `count` apps of `module(i)` from 8 loops at once; their ids, in creation order. */
export async function createApps(b: Brickyard, token: string, count: number, module: (i: number) => string): Promise<string[]> {
  const ids: string[] = new Array<string>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const created = await call(`${b.url}/app`, "POST", token, { module: module(i) });
        if (created.status !== 201) throw new Error(`creating app ${i} answered ${created.status}: ${JSON.stringify(created.json)}`);
        ids[i] = created.json.id as string;
      }
    }),
  );
  return ids;
}

/** The trivial op called on `apps`, each call's app drawn by a Zipf law (the load client draws). */
export function zipfRow(b: Brickyard, apps: string[], token: string): Row {
  const target: Target = { url: `${b.url}/app/{app}/api/op`, method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: "{}" };
  return { targets: [target], spread: { apps, s: ZIPF_S }, pids: () => b.built.ctx.executor.pool.pids() };
}

/** The executor processes' resident memory together, in bytes (Linux /proc). */
export function executorRss(b: Brickyard): number {
  return b.built.ctx.executor.pool.rssBytes();
}

/** What the executors hold: their RSS and isolates together, and so the RSS an isolate costs. */
export function executorFootprint(b: Brickyard): string {
  const { pool } = b.built.ctx.executor;
  const rss = pool.rssBytes();
  const { isolates } = pool.census();
  return `executors' RSS after the Zipf row: ${(rss / 2 ** 20).toFixed(0)} MiB for ${isolates} isolates in ${pool.pids().length} processes (~${(rss / 2 ** 20 / Math.max(1, isolates)).toFixed(1)} MiB each)`;
}

/**
 * An agent's edit, then its call: `count` times, a new revision is published, 200 ms pass (the
 * agent reading the answer), and its first call is timed; then a second call of the same
 * revision at once (`next`), and a third after another 200 ms (`paused`). The third is the warm
 * baseline: warm by any measure, and after the same pause as the first. On a VM whose CPUs halt
 * when idle, 200 ms of quiet alone cost a warm call ~1.3 ms (measured: p50 5.0 ms against 3.7 at
 * once), which is the machine's, not the publish's; so the difference between first and paused
 * is what publishing still leaves to the first call.
 */
export async function publishThenCall(b: Brickyard, token: string, appId: string, module: (revision: number) => string, count: number): Promise<{ first: number[]; next: number[]; paused: number[] }> {
  const first: number[] = [];
  const next: number[] = [];
  const paused: number[] = [];
  const pause = () => new Promise((resolve) => setTimeout(resolve, 200));
  for (let revision = 2; revision <= count + 1; revision++) {
    const put = await call(`${b.url}/app/${appId}`, "PUT", token, { module: module(revision) });
    if (put.status !== 200) throw new Error(`PUT answered ${put.status}: ${JSON.stringify(put.json)}`);
    await pause();
    first.push(await timedCall(`${b.url}/app/${appId}/api/op`, token, revision));
    next.push(await timedCall(`${b.url}/app/${appId}/api/op`, token, revision));
    await pause();
    paused.push(await timedCall(`${b.url}/app/${appId}/api/op`, token, revision));
  }
  const sorted = (times: number[]) => times.sort((x, y) => x - y);
  return { first: sorted(first), next: sorted(next), paused: sorted(paused) };
}

export const p99 = (sorted: readonly number[]): number => percentile(sorted, 0.99);
