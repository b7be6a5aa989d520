// The off-thread worker's entry when Brickyard runs from its TypeScript sources (tests, `npm run
// dev`): registers tsx, as bin/brickyard.js once did, then runs thread.ts. The compiled build
// (scripts/build.mjs) starts its compiled thread.js instead, with no loader.
import { register } from "tsx/esm/api";

register();
await import("./thread.ts");
