import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { PreparedSource } from "../src/domain/source/source.ts";
import { OffThread } from "../src/offthread/index.ts";

// The check worker starts on first use and must never keep a process alive: a server embedded in
// another program (a benchmark, a test runner) exits once it is closed, with no process.exit.
it("a process that ran a job on the check worker exits by itself", async () => {
  const validators = join(import.meta.dirname, "../src/runtime/operations/validators.ts");
  const script = `const { Validators } = await import(${JSON.stringify(validators)});
const validate = await Validators.shared.of({ type: "object" });
console.log(validate({}));`;
  const dir = mkdtempSync(join(tmpdir(), "brickyard-offthread-"));
  writeFileSync(join(dir, "run.mts"), script);
  const child = spawn(process.execPath, ["--import", "tsx", join(dir, "run.mts")], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const [code, signal] = (await once(child, "exit")) as [number | null, string | null];
  clearTimeout(killer);
  rmSync(dir, { recursive: true, force: true });
  expect(out.trim()).toBe("true");
  expect({ code, signal }).toEqual({ code: 0, signal: null });
});

const tinyModule = (id: string) => ({ module: `export const manifest = { id: "${id}", routes: { op: {} } };\nexport default { fetch() { return new Response("1"); } };`, ui: null, styles: null });

it("hands the worker several jobs at once, so it works on while Node's thread is busy", async () => {
  const worker = new OffThread();
  try {
    await worker.run({ type: "prepare", source: tinyModule("warm") });
    const settled: string[] = [];
    const jobs = ["a", "b", "c"].map((id) => worker.run<PreparedSource>({ type: "prepare", source: tinyModule(id) }).then((p) => settled.push(p.manifest.id)));
    // Block this thread well past the three jobs' time: the worker must not wait for us between them.
    const until = performance.now() + 400;
    while (performance.now() < until);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toEqual(["a", "b", "c"]);
    await Promise.all(jobs);
  } finally {
    await worker.close();
  }
});
