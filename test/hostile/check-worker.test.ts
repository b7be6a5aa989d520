import { expect, it } from "vitest";
import type { PreparedSource } from "../../src/domain/source/source.ts";
import { OffThread } from "../../src/offthread/index.ts";
import { SchemaCostError } from "../../src/schemas/cost.ts";

// The check worker runs what anonymous writers send. A module built to be slow to check must cost
// its own write only: the writes handed to the worker behind it are checked on a fresh worker.

const tinyModule = (id: string) => ({ module: `export const manifest = { id: "${id}", routes: { op: {} } };\nexport default { fetch() { return new Response("1"); } };`, ui: null, styles: null });
// Dense statements up to the 256 KiB cap: acorn and the import scan take hundreds of ms over them.
const slowModule = { module: `export const manifest = { id: "slow", routes: {} };\nexport default { fetch() { return new Response("1"); } };\nconst a = 1;\n${"a;".repeat(130_000)}`, ui: null, styles: null };

it("refuses a job past its deadline and runs the jobs handed over behind it on a fresh worker", async () => {
  const worker = new OffThread(50);
  try {
    await worker.run({ type: "prepare", source: tinyModule("warm") });
    const slow = worker.run({ type: "prepare", source: slowModule });
    const behind = [worker.run<PreparedSource>({ type: "prepare", source: tinyModule("after1") }), worker.run<PreparedSource>({ type: "prepare", source: tinyModule("after2") })];
    const refusal = await slow.then(() => null, (error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaCostError);
    expect((refusal as Error).message).toBe("checking it took more than 50 ms");
    expect((await Promise.all(behind)).map((p) => p.manifest.id)).toEqual(["after1", "after2"]);
  } finally {
    await worker.close();
  }
});
