import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiResponse } from "../helpers/client.ts";
import { appModule, callUntil, figures, quarantined, quarantinedApps, report, startScene, type Scene } from "./scene.ts";

const SECONDS = 60;
const EVERY_MS = 2_000;

/**
 * Issue 42: a stream of fresh anonymous apps that each loop on their first call, one every 2 s
 * for a minute, each created from an address of another /64 (a proxy we trust names it), so that
 * the per-network create limit never stops them. Their first calls run on the free lane's
 * processes for new code, where only apps as new as they are run; the established anonymous app
 * and the claimed one, each called 10 times a second, never share a process with them.
 */
describe("hostile: a stream of fresh looping anonymous apps from rotating addresses", () => {
  let scene: Scene;

  beforeAll(async () => {
    scene = await startScene({ anonymousVictim: true, rate: 10, env: { TRUST_PROXY: "1" } });
  });
  afterAll(async () => scene.close());

  it(`one every ${EVERY_MS / 1000} s for ${SECONDS} s: the victims keep their calls and their speed, every looping app ends quarantined or refused`, async () => {
    const from = Date.now();
    const attackers: { id: string; answers: Promise<ApiResponse[]> }[] = [];
    const refusedCreates: number[] = [];
    for (let i = 0; i < SECONDS / (EVERY_MS / 1000); i++) {
      const due = from + i * EVERY_MS;
      // The attack's own pace: one new app per period, whatever the last one is doing.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
      const address = `2001:db8:${(i + 1).toString(16)}:${i.toString(16)}::${i + 1}`;
      const created = await scene.server.client.post("/app", { module: appModule(`looper-${i}`, { go: "for (;;) {}" }) }, { headers: { "x-forwarded-for": address } });
      if (created.status !== 201) {
        expect(created.status).toBe(429);
        refusedCreates.push(i);
        continue;
      }
      const app = { id: created.body.id as string, token: created.body.token as string };
      scene.names[app.id] = `looper ${i}`;
      attackers.push({ id: app.id, answers: callUntil(scene.server, app, "go", quarantined, 30_000) });
    }
    const settled = await Promise.all(attackers.map(async (a) => ({ id: a.id, answers: await a.answers })));
    const to = Date.now();

    for (const { id, answers } of settled) {
      expect(quarantined(answers.at(-1) as ApiResponse), `${scene.names[id]}: ${answers.map((a) => a.body?.error?.details?.reason ?? a.status).join("→")}`).toBe(true);
      for (const res of answers) expect({ status: res.status, kind: res.body.error.kind }).toEqual({ status: 503, kind: "executor_error" });
    }
    const convicted = quarantinedApps(scene.logs);
    for (const v of scene.victims) expect(convicted).not.toContain(v.id);

    const claimed = figures(scene.probe.samples, from, to, "claimed");
    const anonymous = figures(scene.probe.samples, from, to, "anonymous");
    report(`fresh looping anonymous apps, ${settled.length} in ${SECONDS} s (claimed victim)`, claimed, claimed, 0, convicted.filter((id) => scene.names[id] !== undefined), scene.names);
    report(`fresh looping anonymous apps, ${settled.length} in ${SECONDS} s (established anonymous victim)`, anonymous, anonymous, 0, [], scene.names);
    expect(settled.length + refusedCreates.length).toBe(SECONDS / (EVERY_MS / 1000));
    expect(claimed.victimCalls).toBeGreaterThan(SECONDS * 8);
    expect(claimed.victimSuccess).toBe(1);
    expect(anonymous.victimSuccess).toBeGreaterThanOrEqual(0.99);
    for (const f of [claimed, anonymous]) expect(f.victimP99, JSON.stringify(f)).toBeLessThanOrEqual(100);
    expect(claimed.healthzP99, JSON.stringify(claimed)).toBeLessThanOrEqual(50);
  }, 180_000);
});
