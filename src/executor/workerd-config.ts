import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** Path of the workerd binary the npm package ships. */
export function workerdBinary(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve("workerd/package.json")), "bin", "workerd");
}

export interface WorkerdConfigOptions {
  /** Unix socket the supervisor listens on. */
  socketPath: string;
  /** Unix socket of the internal API. */
  internalSocketPath: string;
  /** File names of the workers, relative to the config file's directory. */
  supervisorFile: string;
  shimFile: string;
  compatibilityDate: string;
  /** V8 old-space cap per isolate; a heap bomb past it aborts the process, which we restart. */
  maxOldSpaceMb: number;
}

const q = (value: string): string => JSON.stringify(value);

/**
 * The capnp text config of one executor process: the supervisor on its socket, the internal
 * API as an external service, nothing else. No `internet` service is used by app isolates:
 * they get `globalOutbound: null` from the supervisor.
 */
export function renderConfig(o: WorkerdConfigOptions): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    ( name = "supervisor",
      worker = (
        modules = [ (name = "supervisor.js", esModule = embed ${q(o.supervisorFile)}) ],
        compatibilityDate = ${q(o.compatibilityDate)},
        compatibilityFlags = ["experimental"],
        bindings = [
          (name = "LOADER", workerLoader = ()),
          (name = "INTERNAL", service = "internal"),
          (name = "SHIM", text = embed ${q(o.shimFile)}),
          (name = "COMPATIBILITY_DATE", text = ${q(o.compatibilityDate)}),
        ],
      )
    ),
    ( name = "internal", external = ( address = ${q(`unix:${o.internalSocketPath}`)}, http = () ) ),
  ],
  sockets = [ ( name = "http", address = ${q(`unix:${o.socketPath}`)}, http = (), service = "supervisor" ) ],
  v8Flags = [ ${q(`--max-old-space-size=${o.maxOldSpaceMb}`)} ],
);
`;
}
