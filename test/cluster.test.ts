import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROUTINE_TICK_MS } from "../src/scheduler/jobs.ts";
import { itBrowser, launchBrowser } from "./helpers/browser.ts";
import { startCluster, type Cluster } from "./helpers/cluster.ts";
import { loadModule, missingAfter, startMixedLoad, type LoadTarget } from "./helpers/mixed-load.ts";
import { renderTokenAt } from "./helpers/web.ts";

const reachable = inject("pgAdminUrl") !== null;
const APPS = 8;

// Issue 21's operator story: three `brickyard serve` on one PostgreSQL and one S3 bucket behind a
// round-robin load balancer that health-checks /readyz, under a steady mix of traffic, through a
// rolling restart and a crash.
(reachable ? describe : describe.skip)(`three instances behind a load balancer${reachable ? "" : " — SKIPPED: PostgreSQL unreachable"}`, () => {
  let cluster: Cluster;
  const targets: LoadTarget[] = [];
  const post = (path: string, body: unknown, bearer = cluster.token) =>
    fetch(`${cluster.proxy.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" }, body: JSON.stringify(body) });

  beforeAll(async () => {
    cluster = await startCluster(3);
    for (let i = 0; i < APPS; i++) {
      const made = (await (await post("/app", { module: loadModule(`cluster-${i}`) })).json()) as { id: string };
      const hook = (await (await post(`/api/v1/apps/${made.id}/webhooks`, { op: "put" })).json()) as { webhook: { id: string; secret: string } };
      targets.push({ appId: made.id, hook: { id: hook.webhook.id, secret: hook.webhook.secret } });
    }
  }, 180_000);
  afterAll(async () => {
    await cluster?.close();
  });

  itBrowser("a browser's event stream on instance A sees a KV write made through instance C", async () => {
    const [a, , c] = cluster.instances.map((instance) => instance.base);
    // Unclaimed, so a browser gets a render token from its page without signing in.
    const anonymous = await fetch(`${cluster.proxy.url}/app`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ module: loadModule("live") }) });
    const created = (await anonymous.json()) as { id: string; token: string };
    const render = await renderTokenAt(a as string, created.id);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      // A plain page of A's origin: the stream below is same-origin to A, and only to A.
      await page.route(`${a}/blank`, (route) => route.fulfill({ contentType: "text/html", body: "<!doctype html><title>blank</title>" }));
      await page.goto(`${a}/blank`);
      // Page scripts as strings: the tests are compiled without the DOM's types.
      await page.evaluate(`new Promise((resolve, reject) => {
        window.events = [];
        const stream = new EventSource(${JSON.stringify(`/app/${created.id}/events?t=${render}`)});
        stream.addEventListener("hello", () => resolve());
        stream.addEventListener("data", (event) => window.events.push(event.data));
        stream.onerror = () => reject(new Error("the event stream failed"));
      })`);
      const written = await fetch(`${c}/app/${created.id}/api/put`, { method: "POST", headers: { authorization: `Bearer ${created.token}`, "content-type": "application/json" }, body: JSON.stringify({ k: "seen", v: 1 }) });
      expect(written.status).toBe(200);
      await page.waitForFunction("window.events.length > 0");
      expect(await page.evaluate("window.events")).toEqual(['{"keys":["seen"]}']);
    } finally {
      await browser.close();
    }
  });

  it("a rolling restart (SIGTERM, wait, start, each in turn) under load fails no request and loses no acknowledged write or asset", { timeout: 240_000 }, async () => {
    const load = startMixedLoad(cluster.proxy.url, cluster.token, targets, "rolling");
    await load.next(50);
    for (const instance of cluster.instances) {
      const exited = instance.signal("SIGTERM");
      await cluster.proxy.until(instance.base, false);
      expect(await exited).toEqual({ code: 0, signal: null });
      await instance.start();
      await cluster.proxy.until(instance.base, true);
      // Back in rotation and answering before the next one goes.
      const served = cluster.proxy.served.get(instance.base) ?? 0;
      while ((cluster.proxy.served.get(instance.base) ?? 0) < served + 10) await load.next(1);
    }
    const report = await load.stop();
    console.warn(`rolling restart under load: ${report.requests} requests, ${report.kv.length} KV writes and ${report.assets.length} assets acknowledged`);
    expect(report.failures).toEqual([]);
    expect(cluster.proxy.failures).toEqual([]);
    // The load was real: every kind went through, on every instance.
    expect(report.kv.length).toBeGreaterThan(100);
    expect(report.assets.length).toBeGreaterThan(10);
    for (const instance of cluster.instances) expect(cluster.proxy.served.get(instance.base)).toBeGreaterThan(0);
    expect(await missingAfter(cluster.proxy.url, cluster.token, report)).toEqual([]);
  });

  it("kill -9 of one instance: only requests in flight on it fail, each retryable; its routines tick on the others within one lease period", { timeout: 120_000 }, async () => {
    const [victim] = cluster.instances;
    if (victim?.pid === null || victim === undefined) throw new Error("instance A is not running");
    const routine = (await (await post(`/api/v1/apps/${targets[0]?.appId}/routines`, { op: "tick", interval: "hourly" })).json()) as { routine: { id: string } };
    const failuresBefore = cluster.proxy.failures.length;
    const load = startMixedLoad(cluster.proxy.url, cluster.token, targets, "crash");
    await load.next(50);

    process.kill(victim.pid, "SIGKILL");
    const killedAt = Date.now();
    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      // The worst case: the victim had claimed the routine job's period the moment it died.
      await db.query("update leases set holder = 'killed', claimed_at = $1, next_at = $2 where name = 'routines'", [killedAt, killedAt + ROUTINE_TICK_MS]);
      await db.query("update routines set next_run_at = $1 where id = $2", [killedAt, routine.routine.id]);
      await cluster.proxy.until(victim.base, false);
      await load.next(100);
      const report = await load.stop();

      const fromCrash = cluster.proxy.failures.slice(failuresBefore);
      for (const failure of fromCrash) expect(failure.backend).toBe(victim.base);
      for (const failure of report.failures) expect([502, 503, 504]).toContain(failure.status);
      expect(report.failures.length).toBe(fromCrash.length);
      console.warn(`kill -9 under load: ${report.requests} requests, ${report.failures.length} cut off in flight (${report.failures.map((f) => f.status).join(", ") || "none"})`);
      expect(await missingAfter(cluster.proxy.url, cluster.token, report)).toEqual([]);

      // The routine runs on a survivor once the dead instance's period runs out.
      let ranAt: number | null = null;
      while (ranAt === null) {
        const row = await db.query<{ last_run_at: string | null }>("select last_run_at from routines where id = $1", [routine.routine.id]);
        ranAt = row.rows[0]?.last_run_at == null ? null : Number(row.rows[0].last_run_at);
        if (ranAt === null) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(ranAt - killedAt).toBeLessThan(ROUTINE_TICK_MS + 5000);
      const ticks = await post(`/app/${targets[0]?.appId}/api/get`, { keys: ["ticks"] });
      expect(await ticks.json()).toEqual({ ok: true, value: [1] });
    } finally {
      await db.end();
    }
  });
});
