import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";

// The check worker starts on first use and must never keep a process alive: a server embedded in
// another program (a benchmark, a test runner) exits once it is closed, with no process.exit.
it("a process that ran a job on the check worker exits by itself", async () => {
  const validators = join(import.meta.dirname, "../src/domain/schemas/validators.ts");
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
