import { createRequire } from "node:module";
import { networkInterfaces } from "node:os";
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
  egressFile: string;
  compatibilityDate: string;
  /** V8 old-space cap per isolate; a heap bomb past it aborts the process, which we restart. */
  maxOldSpaceMb: number;
  egress: EgressConfig;
  /** When an app isolate collects its garbage (the shim, with gc.worker.js's gc()). */
  gc: { everyCalls: number; minIntervalMs: number };
}

/** How app isolates reach the network (issue 5): only through the supervisor's Egress entrypoint. */
export interface EgressConfig {
  /** Lets the Egress entrypoint report refusals to the internal API; app code never sees it. */
  key: string;
  /**
   * Tests only, set in code and never from a request or the environment: hosts served by a
   * loopback fixture as if they were public origins, with the fixture's CA. Every other policy
   * check still applies to them.
   */
  testOverrides?: { hosts: Record<string, string>; caPem: string };
}

// NAT64 and 6to4 embed IPv4 addresses the "public" filter cannot see through; 198.18/15 is
// benchmarking space that often routes inside data centres; the three TEST-NETs and fec0::/10
// (deprecated site-local) are not public either, though workerd's filter lets them through.
const EGRESS_DENY = ["64:ff9b::/96", "2002::/16", "198.18.0.0/15", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "fec0::/10"];

/**
 * The host's own addresses: a public address of this machine reaches whatever listens on all
 * interfaces here (the control plane with HOST=0.0.0.0, the database), so it is refused too.
 */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((nic) => (nic.family === "IPv6" ? `${nic.address.split("%")[0] ?? nic.address}/128` : `${nic.address}/32`));
}

const q = (value: string): string => JSON.stringify(value);

/**
 * The capnp text config of one executor process: the supervisor on its socket, the internal
 * API as an external service, and the `internet` network service that only connects to public
 * addresses. App isolates reach it only through the supervisor's Egress entrypoint.
 */
export function renderConfig(o: WorkerdConfigOptions): string {
  const overrides = Object.entries(o.egress.testOverrides?.hosts ?? {});
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    ( name = "supervisor",
      worker = (
        modules = [
          (name = "supervisor.js", esModule = embed ${q(o.supervisorFile)}),
          (name = "egress.js", esModule = embed ${q(o.egressFile)}),
        ],
        compatibilityDate = ${q(o.compatibilityDate)},
        compatibilityFlags = ["experimental", "enable_ctx_exports", "no_web_socket_compression"],
        bindings = [
          (name = "LOADER", workerLoader = ()),
          (name = "INTERNAL", service = "internal"),
          (name = "SHIM", text = embed ${q(o.shimFile)}),
          (name = "KV_CACHE", text = embed "kv-cache.worker.js"),
          (name = "GC_HOOK", text = embed "gc.worker.js"),
          (name = "BACKGROUND", text = embed "background.worker.js"),
          (name = "LOGS", text = embed "logs.worker.js"),
          (name = "GC_POLICY", json = ${q(JSON.stringify(o.gc))}),
          (name = "COMPATIBILITY_DATE", text = ${q(o.compatibilityDate)}),
          (name = "INTERNET", service = "internet"),
          (name = "EGRESS_KEY", text = ${q(o.egress.key)}),
          (name = "EGRESS_OVERRIDES", json = ${q(JSON.stringify(Object.fromEntries(overrides.map(([host], i) => [host, `EGRESS_OVERRIDE_${i}`]))))}),
${overrides.map((_, i) => `          (name = "EGRESS_OVERRIDE_${i}", service = "egress-override-${i}"),
`).join("")}        ],
      )
    ),
    ( name = "internal", external = ( address = ${q(`unix:${o.internalSocketPath}`)}, http = () ) ),
    ( name = "internet", network = ( allow = ["public"], deny = [${[...EGRESS_DENY, ...hostAddresses()].map(q).join(", ")}], tlsOptions = ( trustBrowserCas = true ) ) ),
${overrides
  .map(
    ([host, address], i) =>
      `    ( name = "egress-override-${i}", external = ( address = ${q(address)}, https = ( tlsOptions = ( trustedCertificates = [${q(o.egress.testOverrides?.caPem ?? "")}] ), certificateHost = ${q(host.replace(/:\d+$/, ""))} ) ) ),
`,
  )
  .join("")}  ],
  sockets = [ ( name = "http", address = ${q(`unix:${o.socketPath}`)}, http = (), service = "supervisor" ) ],
  # --expose-gc: see workers/gc.worker.js (apps never see gc) and GC_POLICY in the shim.
  v8Flags = [ ${q(`--max-old-space-size=${o.maxOldSpaceMb}`)}, "--expose-gc" ],
);
`;
}
