import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../helpers/apps.ts";
import { burst, callOp, createAnonymous, expectUnharmed, figures, quarantinedApps, report, startScene, type Scene } from "./scene.ts";

const EVIL = "^(a+)+$";
// 31 a's and a mismatch: about 2^31 steps for a backtracking engine, which froze Node for 12 s.
const ATTACK_INPUT = `${"a".repeat(31)}!`;

function module(id: string, routes: Record<string, unknown>, value: string): string {
  return `export const manifest = ${JSON.stringify({ id, routes })};
export default { async fetch() { return Response.json({ ok: true, value: ${JSON.stringify(value)} }); } };
`;
}

/**
 * Regular expressions an app declares run in a linear-time engine (RE2 semantics), so an input
 * or output built to make a backtracking engine explode costs microseconds; patterns that need
 * backtracking (backreferences, lookaround) cannot be declared at all.
 */
describe("hostile: patterns built to backtrack", () => {
  let scene: Scene;
  beforeAll(async () => {
    scene = await startScene();
  });
  afterAll(async () => scene.close());

  it("50 input checks of ^(a+)+$ in flight: each refused 400, /healthz and the victim unharmed", async () => {
    const app = await createAnonymous(
      scene.server,
      module("redos-in", { check: { access: "read", input: { type: "object", properties: { s: { type: "string", pattern: EVIL } } } } }, "never"),
    );
    const from = Date.now();
    const answers = await burst(scene.server, app, "check", { s: ATTACK_INPUT }, 50);
    await scene.probe.victimSamples(8);
    const to = Date.now();
    expect(answers).toEqual(Array.from({ length: 50 }, () => ({ status: 400, kind: "invalid_input" })));
    // The pattern itself is fine: a matching input passes.
    expect((await callOp(scene.server, app.id, "check", app.token, { s: "aaaa" })).status).toBe(200);
    const during = figures(scene.probe.samples, from, to);
    report("ReDoS input pattern, 50 in flight", during, during, 0, quarantinedApps(scene.logs), {});
    expectUnharmed(during, "ReDoS input");
  });

  it("56 outputs checked against ^(a+)+$: each refused invalid_output, /healthz and the victim unharmed", async () => {
    const app = await createAnonymous(scene.server, module("redos-out", { echo: { access: "read", input: { type: "object" }, output: { type: "string", pattern: EVIL } } }, ATTACK_INPUT));
    const from = Date.now();
    const answers = [];
    // In waves of 8, the free plan's concurrent runs: each one reaches the app and its output check.
    for (let wave = 0; wave < 7; wave++) answers.push(...(await burst(scene.server, app, "echo", {}, 8)));
    await scene.probe.victimSamples(8);
    const to = Date.now();
    expect(answers).toEqual(Array.from({ length: 56 }, () => ({ status: 502, kind: "invalid_output" })));
    const during = figures(scene.probe.samples, from, to);
    report("ReDoS output pattern, 56 in waves of 8", during, during, 0, quarantinedApps(scene.logs), {});
    expectUnharmed(during, "ReDoS output");
  });

  it("refuses at create, 400 invalid_route_schema, patterns no linear-time engine runs and schemas too costly to check", async () => {
    const refused: [string, unknown][] = [
      ["backreference", { type: "string", pattern: "^(a+)\\1$" }],
      ["lookahead", { type: "string", pattern: "^(?=a)a+$" }],
      ["a self-referencing $ref", { $defs: { x: { $ref: "#/$defs/x" } }, $ref: "#/$defs/x" }],
      // ajv falls back to the root for a dynamic anchor no node names: a loop at every call.
      ["a $dynamicRef to no anchor", { $dynamicRef: "#x" }],
      ["a $ref to no anchor", { $ref: "#nowhere" }],
      ["a remote $ref", { $ref: "https://example.com/schema.json" }],
      ["300 nested objects", nested(300)],
    ];
    for (const [what, schema] of refused) {
      const res = await scene.server.client.post("/app", { module: module("bad-schema", { op: { access: "read", input: { type: "object", properties: { v: schema } } } }, "x") });
      const error = expectError(res, 400, "invalid_route_schema");
      expect(error.message, what).toMatch(/op/);
    }
  });
});

function nested(depth: number): unknown {
  let schema: unknown = { type: "string" };
  for (let i = 0; i < depth; i++) schema = { type: "object", properties: { v: schema } };
  return schema;
}
