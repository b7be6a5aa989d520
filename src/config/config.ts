import { isIP } from "node:net";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { openFilesLimit } from "./open-files.ts";

/** Everything Brickyard reads from the environment, parsed once at boot (DECISIONS §0). */
export interface Config {
  /** TCP port of the public HTTP server. */
  port: number;
  /** Interface the public server binds. */
  host: string;
  /** Public origin used in every URL the service hands out, without a trailing slash. */
  baseUrl: string;
  /** Directory for the SQLite file, blobs, the secrets key and executor sockets. */
  dataDir: string;
  /** PostgreSQL connection string; unset means SQLite in `dataDir`. */
  databaseUrl: string | null;
  /** DATABASE_PREPARE=off: no named (prepared) statements on PostgreSQL, for poolers that cannot keep them. */
  databasePrepare: boolean;
  /** Where asset bytes live: files (`dataDir/blobs` when BLOB_STORE is unset) or an S3 bucket. */
  blobStore: BlobStoreConfig;
  /** Number of workerd processes for claimed apps. */
  executors: number;
  /** Number of workerd processes for unclaimed apps, apart from claimed ones (0: share them). */
  freeExecutors: number;
  /** Processes per lane for the first calls of new apps and revisions (0: they run in the lane). */
  newExecutors: number;
  /** Whether anyone may sign up (`open`) or only the CLI creates users (`closed`). */
  signup: "open" | "closed";
  /** SMTP URL for outgoing mail; unset keeps mail in the outbox table. */
  smtpUrl: string | null;
  /** 32-byte key (base64) for secrets at rest; unset means generated once into `dataDir`. */
  secretsKey: string | null;
  /** Log level for pino. */
  logLevel: string;
  /** METRICS_TOKEN: the bearer token `GET /metrics` asks for; unset, there are no metrics at all. */
  metricsToken: string | null;
  /** DNS_RESOLVER `host:port`: the server custom domains' TXT records are looked up at (DECISIONS §12); null for the system's. */
  dnsResolver: string | null;
  /** LOG_FORMAT: `json` lines, `pretty` for people, or `auto` (pretty on a terminal, JSON otherwise). */
  logFormat: "auto" | "json" | "pretty";
  /**
   * After SIGTERM, how long `/readyz` answers 503 while requests are still served, so a load
   * balancer stops sending before the drain starts. 0 (one instance, no balancer): drain at once.
   */
  shutdownGraceMs: number;
  /** How long a client may take to send a whole request (headers and body) before it is answered 408 and closed. */
  requestTimeoutMs: number;
  /** Client connections held at once (a tenth of them from one network when no proxy is trusted). */
  maxConnections: number;
  /**
   * Which proxies' `X-Forwarded-For` (or `Forwarded`) names the client, for rate limits, logs and
   * webhook records: false (none: the socket's address), a hop count, or addresses and CIDRs.
   */
  trustProxy: false | number | string[];
  /** Where builds resolve `npm:` imports (DECISIONS §10). */
  npm: {
    registryUrl: string;
    /** Sent only to the registry's own origin. */
    token: string | null;
    /** Versions published less than this long ago are passed over (0: any). */
    minReleaseAgeMs: number;
  };
  /** How long a build job's lease lasts before another instance may take it over. */
  buildLeaseMs: number;
  /** The wait before a build retries after the registry could not be reached (doubled each time). */
  buildRetryMs: number;
}

export type BlobStoreConfig =
  | { kind: "files"; root: string }
  | {
      kind: "s3";
      bucket: string;
      /** Prepended with a `/` to every key; "" for none. */
      prefix: string;
      /** An S3-compatible service's origin; null for AWS itself. */
      endpoint: string | null;
      /** null: the SDK's usual sources (AWS_REGION, the shared config file). */
      region: string | null;
      /** Path-style addressing (`endpoint/bucket/key`), which most S3-compatible servers need. */
      forcePathStyle: boolean;
    };

type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, "PORT", 8080, 0, 65535);
  const baseUrl = (nonEmpty(env.BASE_URL) ?? `http://localhost:${port}`).replace(/\/+$/, "");
  if (!/^https?:\/\/[^/]+$/.test(baseUrl)) {
    throw new ConfigError(`BASE_URL must be an origin like https://apps.example.com, got ${baseUrl}`);
  }
  const signup = env.SIGNUP ?? "open";
  if (signup !== "open" && signup !== "closed") throw new ConfigError(`SIGNUP must be open or closed, got ${signup}`);
  const secretsKey = nonEmpty(env.SECRETS_KEY);
  if (secretsKey !== null && Buffer.from(secretsKey, "base64").length !== 32) {
    throw new ConfigError("SECRETS_KEY must be 32 bytes, base64-encoded");
  }
  const dataDir = resolve(env.DATA_DIR ?? "./data");
  return {
    port,
    host: env.HOST ?? "127.0.0.1",
    baseUrl,
    dataDir,
    databaseUrl: nonEmpty(env.DATABASE_URL),
    databasePrepare: onOff(env, "DATABASE_PREPARE", true),
    blobStore: blobStore(nonEmpty(env.BLOB_STORE), dataDir),
    executors: integer(env, "EXECUTORS", availableParallelism(), 1, 64),
    freeExecutors: integer(env, "FREE_EXECUTORS", 1, 0, 64),
    newExecutors: integer(env, "NEW_EXECUTORS", 1, 0, 64),
    signup,
    smtpUrl: nonEmpty(env.SMTP_URL),
    secretsKey,
    logLevel: env.LOG_LEVEL ?? "info",
    logFormat: oneOf(env, "LOG_FORMAT", ["auto", "json", "pretty"], "auto"),
    metricsToken: nonEmpty(env.METRICS_TOKEN),
    dnsResolver: dnsResolver(nonEmpty(env.DNS_RESOLVER)),
    npm: {
      registryUrl: registryUrl(nonEmpty(env.NPM_REGISTRY_URL) ?? "https://registry.npmjs.org/"),
      token: nonEmpty(env.NPM_TOKEN),
      minReleaseAgeMs: integer(env, "NPM_MIN_RELEASE_AGE", 0, 0, 365 * 24 * 3600) * 1000,
    },
    buildLeaseMs: integer(env, "BUILD_LEASE_MS", 30_000, 100, 3_600_000),
    buildRetryMs: integer(env, "BUILD_RETRY_MS", 2_000, 10, 600_000),
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", 0, 0, 600_000),
    requestTimeoutMs: integer(env, "REQUEST_TIMEOUT_MS", 120_000, 1_000, 3_600_000),
    // Three quarters of the descriptors: the store, workerd's sockets and served files keep the rest.
    maxConnections: integer(env, "MAX_CONNECTIONS", Math.floor(openFilesLimit() * 0.75), 100, 10_000_000),
    trustProxy: trustProxy(nonEmpty(env.TRUST_PROXY)),
  };
}

/**
 * DNS_RESOLVER: `address:port` (an IPv6 address in brackets), or unset for the system's resolver.
 * An address, not a name: the resolver is what would look a name up (node:dns refuses one, at start).
 */
function dnsResolver(value: string | null): string | null {
  if (value === null) return null;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(value);
  const address = match?.[1] ?? match?.[2] ?? "";
  const port = Number(match?.[3] ?? 0);
  if (isIP(address) === 0 || port < 1 || port > 65535) throw new ConfigError(`DNS_RESOLVER must be an IP address and port (127.0.0.1:53, [::1]:53), got ${value}`);
  return value;
}

/**
 * BLOB_STORE: unset (files under DATA_DIR/blobs), a directory, or
 * `s3://bucket/prefix?endpoint=https://…&region=…&forcePathStyle=1`. Credentials are not part
 * of it: the SDK reads them from its usual environment (AWS_ACCESS_KEY_ID, a profile, a role).
 */
function blobStore(value: string | null, dataDir: string): BlobStoreConfig {
  if (value === null) return { kind: "files", root: resolve(dataDir, "blobs") };
  if (!/^s3:\/\//i.test(value)) return { kind: "files", root: resolve(value) };
  const bad = (why: string) => new ConfigError(`BLOB_STORE ${why}; expected s3://bucket/prefix?endpoint=…&region=…&forcePathStyle=1`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad("is not a URL");
  }
  // S3's bucket naming rules: 3-63 of lower-case letters, digits, dots and dashes.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(url.hostname)) throw bad(`names no valid bucket ("${url.hostname}")`);
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, "");
  if (prefix !== "" && !prefix.split("/").every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== "." && s !== "..")) {
    throw bad(`has a prefix of other than plain path segments ("${prefix}")`);
  }
  const known = new Set(["endpoint", "region", "forcePathStyle"]);
  for (const name of url.searchParams.keys()) if (!known.has(name)) throw bad(`has an unknown parameter "${name}"`);
  const endpoint = url.searchParams.get("endpoint");
  if (endpoint !== null && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) throw bad(`endpoint must be an http(s) origin, got "${endpoint}"`);
  const pathStyle = url.searchParams.get("forcePathStyle") ?? "0";
  if (!["0", "1", "true", "false"].includes(pathStyle)) throw bad(`forcePathStyle must be 1 or 0, got "${pathStyle}"`);
  return {
    kind: "s3",
    bucket: url.hostname,
    prefix,
    endpoint: endpoint?.replace(/\/$/, "") ?? null,
    region: nonEmpty(url.searchParams.get("region") ?? undefined),
    forcePathStyle: pathStyle === "1" || pathStyle === "true",
  };
}

function registryUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`NPM_REGISTRY_URL must be an http(s) URL, got ${raw}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new ConfigError(`NPM_REGISTRY_URL must be an http(s) URL, got ${raw}`);
  return url.href;
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value.trim() === "" ? null : value.trim();
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = nonEmpty(env[name]);
  if (raw === null) return fallback;
  if (raw !== "on" && raw !== "off") throw new ConfigError(`${name} must be on or off, got ${raw}`);
  return raw === "on";
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = nonEmpty(env[name]);
  if (raw === null) return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(", ")}, got ${raw}`);
  return raw as T;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = nonEmpty(env[name]);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer in ${min}..${max}, got ${raw}`);
  }
  return value;
}

/** TRUST_PROXY: unset (trust no proxy), a hop count (`1`), or a comma list of addresses and CIDRs. */
function trustProxy(value: string | null): false | number | string[] {
  if (value === null) return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops < 1 || hops > 16) throw new ConfigError(`TRUST_PROXY as a hop count must be 1..16, got ${value}`);
    return hops;
  }
  const entries = value.split(",").map((entry) => entry.trim());
  for (const entry of entries) {
    const [address = "", bits, extra] = entry.split("/");
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefixOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= max);
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(`TRUST_PROXY must be a hop count or a comma list of IP addresses and CIDRs (10.0.0.0/8), got "${entry}"`);
    }
  }
  return entries;
}
