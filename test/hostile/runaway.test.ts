import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryCeiling } from "../../src/runtime/executor/memory-ceiling.ts";
import type { ApiResponse } from "../helpers/client.ts";
import { appModule, callOp, callUntil, createAnonymous, expectUnharmed, figures, graduate, quarantined, quarantinedApps, quarantineLogged, report, signUp, startScene, type Figures, type Scene } from "./scene.ts";

// A busy stretch of about a third to half a second on these machines: under the 1 s ping
// timeout, so only the CPU budget can stop a loop of them. (Date.now() stands still while an
// isolate runs, so work is counted in iterations.)
const SLICE = `let x = 0; for (let j = 0; j < 3e8; j++) x = (x * 31 + j) | 0;`;

const ATTACKS: { name: string; ops: Record<string, string>; reasons: string[] }[] = [
  {
    name: "busy loop in ctx.waitUntil after answering",
    ops: { go: `ctx.waitUntil(new Promise((r) => setTimeout(r, 20)).then(() => { for (;;) {} })); return "answered";` },
    reasons: ["hung", "cpu"],
  },
  {
    name: "busy loop in a timer after answering",
    ops: { go: `setTimeout(() => { for (;;) {} }, 20); return "answered";` },
    reasons: ["hung", "cpu"],
  },
  {
    name: "CPU in slices shorter than the ping timeout",
    ops: { go: `for (;;) { ${SLICE} await new Promise((r) => setTimeout(r, 1)); }` },
    reasons: ["cpu", "hung"],
  },
  {
    name: "2 GiB Uint8Array off the V8 heap",
    ops: { go: `const a = new Uint8Array(2 ** 31); for (let i = 0; i < a.length; i += 4096) a[i] = 1; return a.length;` },
    // Touching pages takes CPU, so the budget or the ping may stop it first; where the kernel
    // holds the ceiling (a memory cgroup), its kill is named for what it is, never `crashed`.
    reasons: MemoryCeiling.detect() === null ? ["memory", "crashed", "cpu", "hung"] : ["memory", "cpu", "hung"],
  },
];

/**
 * Issue 14's runaway attacks, each from fresh anonymous apps, against a claimed victim called 8
 * times a second and an innocent anonymous bystander past its first calls: the attackers' first
 * calls run on the free lane's processes for new code, so neither shares a process with them.
 */
describe("hostile: runaway app code", () => {
  let scene: Scene;
  let bystander: { id: string; token: string };
  const names: Record<string, string> = {};

  beforeAll(async () => {
    scene = await startScene();
    names[scene.victim.id] = "victim";
    bystander = await createAnonymous(scene.server, appModule("bystander", { ping: `return "pong";` }));
    names[bystander.id] = "bystander";
    await graduate(scene.server, bystander, "ping");
  });
  afterAll(async () => scene.close());

  /** Calls the bystander until `stop` resolves; its answers. */
  function bystanderLoad(stop: Promise<unknown>): Promise<ApiResponse[]> {
    let running = true;
    void stop.finally(() => (running = false));
    return (async () => {
      const answers: ApiResponse[] = [];
      while (running) {
        answers.push(await callOp(scene.server, bystander.id, "ping", bystander.token));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return answers;
    })();
  }

  /**
   * Once an attack ends at `to`: how long until the attackers' neighbour, the bystander, answers
   * again, then two more seconds of the victim; the probe's figures for both stretches.
   */
  async function aftermath(from: number, to: number): Promise<{ during: Figures; after: Figures; recoverMs: number }> {
    const back = await callUntil(scene.server, bystander, "ping", (res) => res.status === 200);
    const recoverMs = Date.now() - to;
    expect(back.at(-1)?.status).toBe(200);
    const afterFrom = Date.now();
    await scene.probe.victimSamples(16);
    return { during: figures(scene.probe.samples, from, to), after: figures(scene.probe.samples, afterFrom, Date.now()), recoverMs };
  }

  for (const attack of ATTACKS) {
    it(`${attack.name}: the attacker is stopped and quarantined, the victim does not notice`, async () => {
      const attacker = await createAnonymous(scene.server, appModule("attacker", attack.ops));
      names[attacker.id] = "attacker";
      const from = Date.now();
      const attacking = callUntil(scene.server, attacker, "go", quarantined);
      const bystanderAnswers = bystanderLoad(attacking);
      const answers = await attacking;
      const to = Date.now();
      const seen = await bystanderAnswers;

      // Stopped: every call that did not answer before the runaway began failed 503 executor_error.
      expect(quarantined(answers.at(-1) as ApiResponse), JSON.stringify(answers.map((a) => a.body))).toBe(true);
      for (const res of answers.filter((a) => a.status !== 200)) {
        expect(res.status).toBe(503);
        expect(res.body.error.kind).toBe("executor_error");
        expect([...attack.reasons, "quarantined"]).toContain(res.body.error.details.reason);
      }
      // Only the attacker pays: the bystander was never quarantined.
      await quarantineLogged(scene.logs, attacker.id);
      expect(quarantinedApps(scene.logs)).toContain(attacker.id);
      expect(quarantinedApps(scene.logs)).not.toContain(bystander.id);
      expect(quarantinedApps(scene.logs)).not.toContain(scene.victim.id);
      expect(seen.some(quarantined)).toBe(false);
      expect(seen.every((res) => res.status === 200)).toBe(true);

      const { during, after, recoverMs } = await aftermath(from, to);
      const reasons = [...new Set(answers.map((a) => (a.status === 200 ? "200" : String(a.body.error.details.reason))))].join("→");
      const suspects = [attacker.id, bystander.id, scene.victim.id];
      report(`${attack.name} (answers: ${reasons})`, during, after, recoverMs, quarantinedApps(scene.logs).filter((id) => suspects.includes(id)), names);
      expectUnharmed(during, `${attack.name}, during`);
      expectUnharmed(after, `${attack.name}, after`);
    }, 60_000);
  }

  /**
   * An attacker whose build hangs with no call of its own in flight: once `hung` saw that build's
   * fault, its calls follow until it is quarantined while the bystander calls; only it pays.
   */
  async function stoppedAfterBuild(label: string, attacker: { id: string; token: string }, from: number, hung: Promise<unknown>): Promise<{ answers: ApiResponse[]; seen: ApiResponse[] }> {
    const attacking = (async () => {
      await hung;
      return callUntil(scene.server, attacker, "go", quarantined);
    })();
    const bystanderAnswers = bystanderLoad(attacking);
    const answers = await attacking;
    const to = Date.now();
    const seen = await bystanderAnswers;

    expect(quarantined(answers.at(-1) as ApiResponse), JSON.stringify(answers.map((a) => a.body))).toBe(true);
    await quarantineLogged(scene.logs, attacker.id);
    expect(quarantinedApps(scene.logs)).not.toContain(bystander.id);
    expect(quarantinedApps(scene.logs)).not.toContain(scene.victim.id);
    expect(seen.some(quarantined)).toBe(false);
    const { during, after, recoverMs } = await aftermath(from, to);
    report(label, during, after, recoverMs, quarantinedApps(scene.logs).filter((id) => [attacker.id, bystander.id, scene.victim.id].includes(id)), names);
    expectUnharmed(during, `${label}, during`);
    expectUnharmed(after, `${label}, after`);
    return { answers, seen };
  }

  it("a top-level loop in a new revision, built as it is published with no call in flight: the attacker is stopped and quarantined, the victim does not notice", async () => {
    const ops = { go: `return "ran";` };
    const attacker = await createAnonymous(scene.server, appModule("attacker", ops));
    names[attacker.id] = "attacker";
    // It ran lately, so its next revision's isolate is built as soon as it is published.
    expect((await callOp(scene.server, attacker.id, "go", attacker.token)).status).toBe(200);
    const from = Date.now();
    const put = await scene.server.client.put(`/app/${attacker.id}`, { module: appModule("attacker", ops, "for (;;) {}") }, { token: attacker.token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // The build that hangs is the warm-up's; only once it faulted do calls follow.
    const hung = scene.logs.next((line) => {
      const event = line.executor as { type?: string; suspects?: string[] } | undefined;
      return event?.type === "fault" && event.suspects?.includes(attacker.id) === true;
    });
    await stoppedAfterBuild("top-level loop built on publish", attacker, from, hung);
  }, 60_000);

  it("a top-level loop written to an app that never ran, built as it is published with no call: the build is charged to the attacker, stopped and quarantined, and no one else notices", async () => {
    const ops = { go: `return "ran";` };
    const attacker = await createAnonymous(scene.server, appModule("attacker", ops));
    names[attacker.id] = "attacker";
    const from = Date.now();
    const put = await scene.server.client.put(`/app/${attacker.id}`, { module: appModule("attacker", ops, "for (;;) {}") }, { token: attacker.token });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // The write's warm-up (AppRunner.warm, one at a time for apps that did not run) hangs its
    // process before any call of the attacker.
    const hung = (async () => {
      const fault = await scene.logs.find((line) => {
        const event = line.executor as { type?: string; culprit?: string | null } | undefined;
        return event?.type === "fault" && event.culprit === attacker.id;
      });
      expect((fault.executor as { failedCalls: number }).failedCalls).toBe(1);
    })();
    const { answers, seen } = await stoppedAfterBuild("top-level loop written to an app that never ran", attacker, from, hung);
    expect(answers.some((res) => res.status === 200)).toBe(false);
    expect(seen.every((res) => res.status === 200)).toBe(true);
  }, 60_000);

  it("churn: fresh anonymous looping apps, one after another, never reach the claimed victim", async () => {
    const from = Date.now();
    const attackers: string[] = [];
    for (let round = 0; round < 4; round++) {
      const spinner = await createAnonymous(scene.server, appModule(`spinner-${round}`, { go: `for (;;) {}` }));
      attackers.push(spinner.id);
      names[spinner.id] = `spinner ${round}`;
      const answers = await callUntil(scene.server, spinner, "go", quarantined);
      expect(quarantined(answers.at(-1) as ApiResponse)).toBe(true);
      for (const res of answers) expect({ status: res.status, kind: res.body.error.kind }).toEqual({ status: 503, kind: "executor_error" });
    }
    const { during, after, recoverMs } = await aftermath(from, Date.now());
    const convicted = quarantinedApps(scene.logs);
    report("churn of anonymous looping apps (4 in a row)", during, after, recoverMs, convicted.filter((id) => attackers.includes(id)), names);
    for (const id of attackers) expect(convicted).toContain(id);
    expect(convicted).not.toContain(scene.victim.id);
    expect(convicted).not.toContain(bystander.id);
    expectUnharmed(during, "churn, during");
    expectUnharmed(after, "churn, after");
  }, 120_000);

  it("a signed-in attacker (a new account): its apps run apart, and after 3 convictions every app of the account is refused before it runs", async () => {
    const mallory = await signUp(scene.server);
    const from = Date.now();
    const convicted: string[] = [];
    for (let round = 0; round < 3; round++) {
      const created = await scene.server.client.post("/app", { module: appModule(`mal-${round}`, { go: `for (;;) {}` }) }, { token: mallory.token });
      expect(created.status).toBe(201);
      const app = { id: created.body.id as string, token: mallory.token };
      names[app.id] = `mallory's app ${round}`;
      expect(quarantined((await callUntil(scene.server, app, "go", quarantined)).at(-1) as ApiResponse)).toBe(true);
      convicted.push(app.id);
    }
    const fresh = await scene.server.client.post("/app", { module: appModule("mal-fresh", { go: `return "never runs";` }) }, { token: mallory.token });
    const refused = await callOp(scene.server, fresh.body.id, "go", mallory.token);
    expect(refused.status).toBe(503);
    expect(refused.body.error.details).toMatchObject({ reason: "quarantined", execution: "not_started" });
    expect(refused.body.error.message).toContain("this account's apps");
    const { during, after, recoverMs } = await aftermath(from, Date.now());
    report("signed-in attacker (new account), 3 looping apps then a 4th", during, after, recoverMs, quarantinedApps(scene.logs).filter((id) => convicted.includes(id) || id === scene.victim.id), names);
    // A new account's apps run in the free lane: the established victim does not notice them.
    expect(quarantinedApps(scene.logs)).not.toContain(scene.victim.id);
    expectUnharmed(during, "signed-in attacker, during");
    expectUnharmed(after, "signed-in attacker, after");
  }, 120_000);
});
