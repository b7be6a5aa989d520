import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** What to run on a machine without Chromium; the loud lines name it. */
export const INSTALL_CHROMIUM = "apt-get install chromium (Debian), or set CHROMIUM_PATH to a Chromium binary";

/**
 * The Chromium the browser tests drive (playwright-core ships none): CHROMIUM_PATH when set, used
 * as given; else Debian's /usr/bin/chromium; else `chromium` or `chromium-browser` on PATH. Null
 * when there is none: the browser tests skip, loudly, unless BRICKYARD_REQUIRE_BROWSER=1.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  const given = env.CHROMIUM_PATH;
  if (given !== undefined && given !== "") return executable(given) ? given : null;
  if (executable("/usr/bin/chromium")) return "/usr/bin/chromium";
  for (const name of ["chromium", "chromium-browser"]) {
    for (const dir of (env.PATH ?? "").split(delimiter)) {
      if (dir !== "" && executable(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
