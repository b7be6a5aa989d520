import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CRUISE = join(ROOT, "node_modules", ".bin", "depcruise");

/** dependency-cruiser over `src` of `cwd` with the project's rules: its exit code and report. */
async function cruise(cwd: string): Promise<{ code: number; report: string }> {
  try {
    const { stdout } = await run(CRUISE, ["src", "--config", join(ROOT, ".dependency-cruiser.cjs"), "--output-type", "err"], { cwd });
    return { code: 0, report: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, report: failed.stdout };
  }
}

/**
 * Issue 44: the layers are rules `npm run check` fails on (.dependency-cruiser.cjs). The real
 * tree passes them; a tree with one planted violation of each kind fails, naming each rule.
 */
describe("layers: the dependency rules", () => {
  const planted = mkdtempSync(join(tmpdir(), "brickyard-layers-"));
  afterAll(() => rmSync(planted, { recursive: true, force: true }));

  it("pass on src/ as it is", async () => {
    const { code, report } = await cruise(ROOT);
    expect(code, report).toBe(0);
  }, 60_000);

  it("fail on a store that imports a route, a domain file that reaches past the runtime's entry, and a cycle", async () => {
    const files: Record<string, string> = {
      "src/routes/r.ts": `export const r = 1;\n`,
      "src/store/planted.ts": `import { r } from "../routes/r.ts";\nexport const s = r;\n`,
      "src/runtime/index.ts": `export const entry = 1;\n`,
      "src/runtime/executor/pool.ts": `export const pool = 1;\n`,
      "src/domain/reach.ts": `import { pool } from "../runtime/executor/pool.ts";\nimport { entry } from "../runtime/index.ts";\nexport const d = pool + entry;\n`,
      "src/lib/a.ts": `import { b } from "./b.ts";\nexport const a = () => b;\n`,
      "src/lib/b.ts": `import { a } from "./a.ts";\nexport const b = () => a;\n`,
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(planted, path)), { recursive: true });
      writeFileSync(join(planted, path), text);
    }
    copyFileSync(join(ROOT, "tsconfig.json"), join(planted, "tsconfig.json"));
    symlinkSync(join(ROOT, "node_modules"), join(planted, "node_modules"));
    const { code, report } = await cruise(planted);
    expect(code, report).not.toBe(0);
    expect(report).toMatch(/layer-store-blobs-offthread: src\/store\/planted\.ts → src\/routes\/r\.ts/);
    expect(report).toMatch(/runtime-entry: src\/domain\/reach\.ts → src\/runtime\/executor\/pool\.ts/);
    expect(report).not.toMatch(/src\/domain\/reach\.ts → src\/runtime\/index\.ts/);
    expect(report).toMatch(/no-circular: src\/lib\/(a|b)\.ts/);
  }, 60_000);
});
