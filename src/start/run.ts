import { main } from "./cli.ts";

// The CLI with its arguments: compiled, dist/brickyard.js (bin/brickyard.js runs it); from the
// TypeScript sources, what `npm run dev` runs under tsx's watch mode (restarts on change).
process.exitCode = await main(process.argv.slice(2));
