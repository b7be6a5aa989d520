import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { launch } from "./executor/launch.ts";
import { DEFAULT_TUNING } from "./executor/tuning.ts";
import { workerdBinary } from "./executor/workerd-config.ts";

const CHECK_TIMEOUT_MS = 10_000;
const STDERR_KEPT = 2_000;
/** Its stderr's last characters: a throwing top level reports there last. */
const STDERR_READ = 64 * 1024;

// The isolate imports the bundle (running its top level) and looks for default.fetch; it has no
// network (no outbound service is bound), no storage and no bindings.
const CHECK_MODULE = `import * as app from "./app.js";
export default {
  async test() {
    if (typeof app.default?.fetch !== "function") throw new Error("the bundle has no default export with a fetch function");
  },
};
`;

/**
 * Loads a bundle in a throwaway workerd (`workerd test`), apart from the executor pool, before it
 * may publish: a bundle that throws at its top level, or lost its default export, fails its build
 * there and not at its first call. Killed after 10 s, so a top level that never returns fails too.
 * Resolves with why it does not load, or null when it does.
 */
export async function checkBundle(bundle: string, nodeCompat: boolean, dir: string): Promise<string | null> {
  const flags = nodeCompat ? `["nodejs_compat"]` : "[]";
  await writeFile(join(dir, "app.js"), bundle);
  await writeFile(join(dir, "check.js"), CHECK_MODULE);
  await writeFile(
    join(dir, "check.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (services = [(name = "check", worker = .worker)]);
const worker :Workerd.Worker = (
  modules = [(name = "check.js", esModule = embed "check.js"), (name = "app.js", esModule = embed "app.js")],
  compatibilityDate = "${DEFAULT_TUNING.compatibilityDate}",
  compatibilityFlags = ${flags},
);
`,
  );
  const { code, stderr } = await run(workerdBinary(), ["test", join(dir, "check.capnp")]);
  if (code !== 0) {
    const reason = stderr
      .split("\n")
      .filter((line) => !/^workerd\/.*: (debug|info):/.test(line) || /uncaught|exception/i.test(line))
      .join("\n")
      .trim();
    return reason.slice(0, STDERR_KEPT) || (code === null ? "it did not finish loading within 10 s" : `workerd exited ${code}`);
  }
  return null;
}

/** Runs it through the launcher (executor/launch.ts: the fork is not this process's). */
function run(binary: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = launch(binary, args, { stderrTail: STDERR_READ });
    // Killed at the deadline, and given a little longer to report it: a launcher that does not
    // answer fails the check as unfinished rather than holding the build for ever.
    const timer = setTimeout(() => {
      child.kill();
      void child.ended().then((exit) => exit === null && resolve({ code: null, stderr: "" }));
    }, CHECK_TIMEOUT_MS);
    child.onExit(({ code, stderr, lost }) => {
      clearTimeout(timer);
      // Not the bundle's doing: the build fails as the service's, not as the bundle's.
      if (lost === true) reject(new Error("the process checking the bundle was lost with its launcher"));
      // A cut tail starts inside a line, which would slip past the filter above.
      else resolve({ code: code ?? (child.pid === undefined ? -1 : null), stderr: stderr.length >= STDERR_READ ? stderr.slice(stderr.indexOf("\n") + 1) : stderr });
    });
  });
}
