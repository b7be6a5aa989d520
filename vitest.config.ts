import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // Most files wait on processes they start (servers, workerd, Chromium) as much as they
    // compute, so two at a time fit two cores; vitest's default (cores - 1) runs them one by one.
    maxWorkers: 2,
    // Files share a worker's module cache: each would otherwise import the whole service again
    // (about 2 s of a 2-core machine per file). Every suite starts and closes its own servers.
    isolate: false,
    // The AWS SDK warns once per process that later releases will need Node 22; the version is
    // pinned in package.json, so the warning is noise in test output.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["test/helpers/global-setup.ts"],
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
