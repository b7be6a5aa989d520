#!/usr/bin/env node
// The `brickyard` command: runs the JavaScript compiled from src/ into dist/ (scripts/build.mjs),
// with no TypeScript loader. `npm install` builds it; a source newer than the build (a pull, an
// edit) rebuilds it here first, in well under a second, so what runs is always what src/ says.
import { build, DIST, stale } from "../scripts/build.mjs";

if (stale()) await build();
// The build has source maps: NODE_OPTIONS=--enable-source-maps makes stack traces point into
// src/ (not on by default: Node reads every map at start, ~90 ms of it).
await import(`${DIST}/brickyard.js`);
