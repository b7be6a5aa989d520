#!/usr/bin/env node
// The `brickyard` command. Sources are TypeScript; tsx compiles them on load (esbuild, cached),
// so a fresh clone runs with `npm install` and no build step.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/start/cli.ts");
process.exitCode = await main(process.argv.slice(2));
