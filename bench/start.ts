// `npm run bench:start` (and the first row of `npm run bench`): how long a server process takes
// from spawn to its first /healthz 200, started as `npm start` starts it (the compiled build, no
// TypeScript loader) and, in the same run, the tsx way (the sources compiled as they load, with
// tsx's cache warm as on any restart). Five of each, alternated, each on a fresh data folder and
// port (so each migrates a new SQLite database, as a first start does). Prints one line per
// start, the medians, and `bench-start: compiled/tsx=R` (target R <= 0.5).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, stale } from "../scripts/build.mjs";
import { freePort } from "../test/helpers/process.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.BENCH_START_ROUNDS ?? 5);
const WAYS = {
  compiled: [join(ROOT, "bin/brickyard.js"), "serve"],
  tsx: ["--import", "tsx", join(ROOT, "src/start/run.ts"), "serve"],
};

/** Milliseconds from spawn to the first /healthz that answers 200. */
async function startMs(args: string[]): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-bench-start-"));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn" }, stdio: "ignore", detached: true });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((res) => res.ok, () => false);
      if (ok) return performance.now() - started;
      if (child.exitCode !== null) throw new Error(`${args.join(" ")} exited ${child.exitCode}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

if (stale()) await build();
const times: Record<keyof typeof WAYS, number[]> = { compiled: [], tsx: [] };
// One unmeasured start of each: the page cache and tsx's compile cache warm, as on any restart.
for (const way of Object.keys(WAYS) as (keyof typeof WAYS)[]) await startMs(WAYS[way]);
for (let round = 0; round < ROUNDS; round++) {
  for (const way of Object.keys(WAYS) as (keyof typeof WAYS)[]) {
    const ms = await startMs(WAYS[way]);
    times[way].push(ms);
    console.log(`start ${way.padEnd(8)} ${ms.toFixed(0).padStart(5)} ms`);
  }
}
const compiled = median(times.compiled);
const tsx = median(times.tsx);
console.log(`process start to /healthz 200, median of ${ROUNDS}: compiled ${compiled.toFixed(0)} ms, tsx ${tsx.toFixed(0)} ms`);
console.log(`bench-start: compiled/tsx=${(compiled / tsx).toFixed(2)}`);
