import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, inject, it } from "vitest";
import { INSTALL_CHROMIUM } from "./chromium.ts";
import { startServer, type TestServer } from "./server.ts";

// Debian's Chromium (`apt-get install chromium`; .ci/run installs it), driven by playwright-core,
// which ships no browser of its own; found once per run (global-setup.ts, chromium.ts).
export const CHROMIUM_PATH: string | null = inject("chromiumPath");
const SKIPPED = ` — SKIPPED: no Chromium (${INSTALL_CHROMIUM})`;

/** `describe` for a suite that drives Chromium: skipped, saying so in its name, where there is none. */
export function describeBrowser(name: string, fn: () => void): void {
  if (CHROMIUM_PATH === null) describe.skip(`${name}${SKIPPED}`, fn);
  else describe(name, fn);
}

/** `it` for one test that drives Chromium in a suite whose other tests do not. */
export const itBrowser: typeof it = (CHROMIUM_PATH === null ? ((name: string, ...rest: unknown[]) => it.skip(`${name}${SKIPPED}`, ...(rest as []))) : it) as typeof it;
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Where screenshots go; gitignored, kept by CI as test artifacts. */
export const ARTIFACTS_DIR = resolve(import.meta.dirname, "../../test-artifacts");

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  /** Saves a full-page PNG as test-artifacts/<name>.png and returns its path. */
  screenshot(page: Page, name: string): Promise<string>;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** A real Chromium with a fresh, throwaway profile: no cookies or cache from any other test. */
export async function launchBrowser(extraArgs: readonly string[] = []): Promise<TestBrowser> {
  if (CHROMIUM_PATH === null) throw new Error(`no Chromium on this machine: ${INSTALL_CHROMIUM}`);
  const profile = mkdtempSync(join(tmpdir(), "brickyard-chromium-"));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw new Error(`could not start Chromium at ${CHROMIUM_PATH} (apt-get install chromium): ${String(error)}`, { cause: error });
  }
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return {
    context,
    newPage: () => context.newPage(),
    async screenshot(page, name) {
      const path = join(ARTIFACTS_DIR, `${name}.png`);
      try {
        await page.screenshot({ path, fullPage: true });
      } catch (error) {
        // Chromium now and then fails a capture on a loaded machine ("Unable to capture
        // screenshot"); a second one, after a frame, is what a person pressing the key again gets.
        if (!String(error).includes("Unable to capture screenshot")) throw error;
        await page.evaluate("new Promise((resolve) => requestAnimationFrame(resolve))");
        await page.screenshot({ path, fullPage: true });
      }
      return path;
    },
    async close() {
      try {
        await context.close();
      } finally {
        rmSync(profile, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A suite's real server and Chromium, started before its tests and closed after: read them as
 * `suite.server` and `suite.browser` inside tests. With no Chromium on the machine, no browser
 * starts: the tests that drive one are skipped (describeBrowser, itBrowser).
 */
export function serverAndBrowser(start: () => Promise<TestServer> = () => startServer()): { readonly server: TestServer; readonly browser: TestBrowser } {
  const suite = {} as { server: TestServer; browser: TestBrowser };
  beforeAll(async () => {
    suite.server = await start();
    if (CHROMIUM_PATH !== null) suite.browser = await launchBrowser();
  });
  afterAll(async () => {
    await suite.browser?.close();
    await suite.server?.close();
  });
  return suite;
}
