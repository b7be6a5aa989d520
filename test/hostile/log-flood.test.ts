import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appModule, callOp, createAnonymous, expectUnharmed, figures, graduate, quarantined, quarantinedApps, quarantineLogged, report, startScene, type Scene } from "./scene.ts";

// One million console.log calls in one op: 64 are kept, the rest cost one increment each.
const MILLION = `for (let i = 0; i < 1e6; i++) console.log("flood line", i, { i }); return "done";`;
// Logging for ever: only the CPU budget ends it.
const FOREVER = `for (let i = 0; ; i++) console.error("x".repeat(200), i);`;

/** Issue 49: printing is the app's own cost, capped per call, and never Node's. */
describe("hostile: an app logging in a tight loop", () => {
  let scene: Scene;

  beforeAll(async () => {
    scene = await startScene({ anonymousVictim: true, rate: 10 });
  });
  afterAll(async () => scene.close());

  it("a million lines in one call: it answers, 64 lines and one marker are kept, the victims and /healthz do not notice", async () => {
    const flooder = await createAnonymous(scene.server, appModule("flooder", { flood: MILLION, ok: `return "ok";` }));
    scene.names[flooder.id] = "flooder";
    await graduate(scene.server, flooder, "ok");
    const from = Date.now();
    for (let round = 0; round < 5; round++) {
      const answer = await callOp(scene.server, flooder.id, "flood", flooder.token);
      expect(answer.body, `round ${round}`).toEqual({ ok: true, value: "done" });
    }
    const to = Date.now();
    const logs = await scene.server.client.get(`/app/${flooder.id}/logs?op=flood&limit=1000`, { token: flooder.token });
    expect(logs.status).toBe(200);
    const lines = logs.body.lines as { requestId: string; message: string }[];
    // Five calls, each its own 64 lines and marker.
    expect(lines).toHaveLength(5 * 65);
    const byCall = new Map<string, { message: string }[]>();
    for (const line of lines) byCall.set(line.requestId, [...(byCall.get(line.requestId) ?? []), line]);
    expect([...byCall.values()].map((l) => l.length)).toEqual([65, 65, 65, 65, 65]);
    for (const call of byCall.values()) expect(call[0]?.message).toContain(`[truncated] ${1e6 - 64} more lines not kept`);
    await scene.probe.victimSamplesSince(from, 50);
    for (const victim of scene.victims) {
      const during = figures(scene.probe.samples, from, Date.now(), victim.name);
      report(`a million console.log calls a call, 5 calls (${victim.name} victim)`, during, during, 0, [], scene.names);
      expectUnharmed(during, `million lines, ${victim.name} victim`);
    }
    expect(to - from).toBeLessThan(30_000);
  }, 90_000);

  it("logging for ever: stopped by its own CPU budget and quarantined; the claimed victim and /healthz do not notice, the anonymous victim on its process waits out the stall", async () => {
    const attacker = await createAnonymous(scene.server, appModule("forever", { go: FOREVER, ok: `return "ok";` }));
    scene.names[attacker.id] = "forever";
    await graduate(scene.server, attacker, "ok");
    const from = Date.now();
    let refused = null;
    for (let offence = 1; offence <= 3 && refused === null; offence++) {
      const answer = await callOp(scene.server, attacker.id, "go", attacker.token);
      expect(answer.status, `offence ${offence}: ${JSON.stringify(answer.body)}`).toBe(503);
      if (quarantined(answer)) refused = answer;
    }
    refused ??= await callOp(scene.server, attacker.id, "go", attacker.token);
    const to = Date.now();
    expect(quarantined(refused), JSON.stringify(refused.body)).toBe(true);
    await quarantineLogged(scene.logs, attacker.id);
    expect(quarantinedApps(scene.logs)).toContain(attacker.id);
    await scene.probe.victimSamplesSince(from, 50);
    for (const victim of scene.victims) {
      const during = figures(scene.probe.samples, from, to, victim.name);
      report(`console.error in an endless loop (${victim.name} victim)`, during, during, 0, [attacker.id], scene.names);
    }
    expectUnharmed(figures(scene.probe.samples, from, to, "claimed"), "endless logging, claimed victim");
    expect(figures(scene.probe.samples, from, to).healthzP99).toBeLessThanOrEqual(50);
    // The anonymous victim runs on the attacker's process (the free lane): as for any runaway
    // there (background-work.test.ts), its calls wait out the stall until the budget ends it, and
    // those past its concurrent runs are refused 429 app_busy; none fails for the fault itself.
    const failed = scene.probe.samples.filter((x) => x.kind === "victim" && x.name === "anonymous" && !x.ok && x.at >= from && x.at <= to);
    expect(failed.filter((x) => x.status !== 429)).toEqual([]);
  }, 90_000);
});
