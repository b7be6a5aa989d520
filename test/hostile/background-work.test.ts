import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiResponse } from "../helpers/client.ts";
import { appModule, callOp, createAnonymous, expectUnharmed, figures, graduate, quarantined, report, startScene, type Scene } from "./scene.ts";

// About six seconds of one core after the answer (Date.now() stands still while an isolate runs,
// so work is counted in iterations): far past the CPU budget, and it ends by itself.
const SPIN_6S = `let x = 0; for (let j = 0; j < 5e9; j++) x = (x * 31 + j) | 0; return x;`;
const BACKGROUND_SPIN = `ctx.waitUntil(new Promise((r) => setTimeout(r, 20)).then(() => { ${SPIN_6S} })); return "answered";`;

interface FaultEvent {
  type: string;
  culprit: string | null;
  sole: boolean;
  quarantined: string | null;
  suspects: string[];
}

/** Issue 42: work an app leaves running after its answer is charged to that app, and only to it. */
describe("hostile: background work after the answer", () => {
  let scene: Scene;

  beforeAll(async () => {
    scene = await startScene({ anonymousVictim: true, rate: 10 });
  });
  afterAll(async () => scene.close());

  /** The fault events charged to `appId` so far. */
  const faultsOf = (appId: string): FaultEvent[] =>
    scene.logs.lines().flatMap((line) => {
      const event = line.executor as FaultEvent | undefined;
      return event?.type === "fault" && event.culprit === appId ? [event] : [];
    });
  const nextFaultOf = (appId: string) => scene.logs.next((line) => (line.executor as FaultEvent | undefined)?.culprit === appId);

  /** Two offences of `attacker`'s `go`: each answers, then its background work takes its process down. */
  async function twoOffences(attacker: { id: string; token: string }, input: unknown): Promise<ApiResponse> {
    for (let offence = 1; offence <= 2; offence++) {
      const fault = nextFaultOf(attacker.id);
      const answer = await callOp(scene.server, attacker.id, "go", attacker.token, input);
      expect(answer.body, `offence ${offence}`).toEqual({ ok: true, value: "answered" });
      await fault;
    }
    return callOp(scene.server, attacker.id, "go", attacker.token, input);
  }

  it("a fresh anonymous app spinning 6 s in ctx.waitUntil: convicted at its first offence, quarantined at its second; the victims keep their calls", async () => {
    const attacker = await createAnonymous(scene.server, appModule("waituntil", { go: BACKGROUND_SPIN }));
    scene.names[attacker.id] = "attacker";
    const from = Date.now();
    const refused = await twoOffences(attacker, {});
    const to = Date.now();
    expect(quarantined(refused), JSON.stringify(refused.body)).toBe(true);
    expect(refused.body.error.details.execution).toBe("not_started");
    const [first, second] = faultsOf(attacker.id);
    // The first offence, on the processes for new code: charged to it by its pending work (the
    // anonymous victim's own first calls ran there lately too). The second, alone on parole: certain.
    expect([first?.quarantined, second?.sole, second?.quarantined]).toEqual([null, true, attacker.id]);
    await scene.probe.victimSamplesSince(from, 100);
    for (const victim of scene.victims) {
      const during = figures(scene.probe.samples, from, to, victim.name);
      report(`ctx.waitUntil spinning 6 s, fresh attacker (${victim.name} victim)`, during, during, 0, [attacker.id], scene.names);
      expectUnharmed(during, `waitUntil, ${victim.name} victim`);
    }
  }, 60_000);

  it("an attacker past its first calls, on the anonymous victim's own process: charged by its pending work, the victim's reads caught in the stall run again", async () => {
    const attacker = await createAnonymous(scene.server, appModule("sleeper", { go: `if (input.spin) { ${BACKGROUND_SPIN} } return "answered";` }).replace("async fetch(request, env, ctx) {", "async fetch(request, env, ctx) {\n    const input = await request.json();"));
    scene.names[attacker.id] = "sleeper";
    await graduate(scene.server, attacker, "go");
    const from = Date.now();
    const refused = await twoOffences(attacker, { spin: true });
    const to = Date.now();
    expect(quarantined(refused), JSON.stringify(refused.body)).toBe(true);
    const [first, second] = faultsOf(attacker.id);
    // The first offence: beside the victim, which ran there lately; the pending work points at the attacker.
    expect(first?.suspects).toContain(scene.victims[1]?.id);
    expect([first?.sole, first?.quarantined, second?.sole, second?.quarantined]).toEqual([false, null, true, attacker.id]);
    await scene.probe.victimSamplesSince(from, 100);
    const claimed = figures(scene.probe.samples, from, to, "claimed");
    const anonymous = figures(scene.probe.samples, from, to, "anonymous");
    report("ctx.waitUntil spinning 6 s, attacker past its first calls (claimed victim)", claimed, claimed, 0, [attacker.id], scene.names);
    report("ctx.waitUntil spinning 6 s, attacker past its first calls (anonymous victim, same process)", anonymous, anonymous, 0, [attacker.id], scene.names);
    expectUnharmed(claimed, "graduated attacker, claimed victim");
    // The anonymous victim shared the first offence's process: its calls waited out the ~1 s
    // stall, and those past its 8 concurrent runs were refused 429 app_busy; every call caught in
    // the stall itself was a read, run again on a fresh process. None failed for the fault.
    const failed = scene.probe.samples.filter((x) => x.kind === "victim" && x.name === "anonymous" && !x.ok && x.at >= from && x.at <= to);
    expect(failed.filter((x) => x.status !== 429)).toEqual([]);
  }, 60_000);

  it("a read op stuck behind someone else's runaway answers 200 from a fresh process; a write answers 503 may_have_run", async () => {
    const module = `export const manifest = {
  id: "bystander-rw",
  routes: { read: { access: "read", input: { type: "object" } }, write: { access: "write", input: { type: "object" } } },
};
export default { async fetch(request) { return Response.json({ ok: true, value: request.headers.get("x-svc-op") }); } };
`;
    const bystander = await createAnonymous(scene.server, module);
    await graduate(scene.server, bystander, "read");
    // The spinner says when it starts: its LOG line reaches the diag ring just before it spins.
    const spinner = await createAnonymous(
      scene.server,
      appModule("spinner", { go: `await env.LOG.emit("info", "spinning now"); for (;;) {}`, ok: `return "ok";` }).replace("export const manifest = {", 'export const manifest = { capabilities: { imports: ["svc:logging/emit@1.0"] },'),
    );
    await graduate(scene.server, spinner, "ok");
    const spinning = callOp(scene.server, spinner.id, "go", spinner.token);
    for (let seen = false; !seen; ) {
      const diag = await scene.server.client.get(`/app/${spinner.id}/diag`, { token: spinner.token });
      seen = diag.text.includes("spinning now");
    }
    const [read, write] = await Promise.all([callOp(scene.server, bystander.id, "read", bystander.token), callOp(scene.server, bystander.id, "write", bystander.token)]);
    expect((await spinning).status).toBe(503);
    expect({ status: read.status, body: read.body }).toEqual({ status: 200, body: { ok: true, value: "read" } });
    expect(write.status).toBe(503);
    expect(write.body.error).toMatchObject({ kind: "executor_error", details: { execution: "may_have_run" } });
    const [fault] = faultsOf(spinner.id);
    expect(fault?.suspects).toContain(bystander.id);
  }, 60_000);
});
