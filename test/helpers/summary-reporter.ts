import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with the plain line CI reads: "N passed, N failed, N skipped", after one line per
 * reason tests were skipped for (a suite or test named "… — SKIPPED: why") and the files it hit.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const reasons = new Map<string, Set<string>>();
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else {
          skipped++;
          const why = / — SKIPPED: (.*?)(?: > |$)/.exec(test.fullName)?.[1];
          if (why !== undefined) reasons.set(why, (reasons.get(why) ?? new Set()).add(module.relativeModuleId));
        }
      }
    }
    for (const [why, files] of reasons) process.stdout.write(`\nSKIPPED (${why}): ${[...files].sort().join(", ")}`);
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
