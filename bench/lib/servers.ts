// What the benchmarks measure against: bare workerd and bare Fastify as baselines, and Brickyard
// itself as `npm start` runs it (default log level, logs written to a sink instead of stdout).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Writable } from "node:stream";
import Fastify from "fastify";
import { buildApp, type BuiltApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config/config.ts";
import { workerdBinary } from "../../src/runtime/executor/workerd-config.ts";
import { migrate, openStore } from "../../src/store/index.ts";

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  return address.port;
}

/** workerd serving `module` over HTTP on loopback TCP, as Brickyard is reached. */
export async function bareWorkerd(dir: string, module: string): Promise<{ url: string; pid: number; stop: () => void }> {
  const port = await freePort();
  const { pid, stop } = await startBareWorkerd(dir, module, `127.0.0.1:${port}`);
  return { url: `http://127.0.0.1:${port}`, pid, stop };
}

/** workerd serving `module` at `address` (`host:port`, or `unix:/path`), once it listens. */
export async function startBareWorkerd(dir: string, module: string, address: string): Promise<{ pid: number; stop: () => void }> {
  writeFileSync(join(dir, "bare.js"), module);
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = (modules = [(name = "bare.js", esModule = embed "bare.js")], compatibilityDate = "2025-09-01")) ],
  sockets = [ (name = "http", address = "${address}", http = (), service = "main") ],
);`;
  return serveWorkerd(dir, "bare.capnp", config);
}

/** Writes `config` to `dir/file` and runs workerd on it until it listens. */
async function serveWorkerd(dir: string, file: string, config: string, flags: string[] = []): Promise<{ pid: number; stop: () => void }> {
  writeFileSync(join(dir, file), config);
  const child = spawn(workerdBinary(), ["serve", ...flags, "--control-fd=3", join(dir, file)], { stdio: ["ignore", "ignore", "inherit", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    child.stdio[3]?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes('"listen"')) resolve();
    });
    child.once("exit", () => reject(new Error(`workerd (${file}) exited`)));
  });
  if (child.pid === undefined) throw new Error(`workerd (${file}) has no pid`);
  return { pid: child.pid, stop: () => child.kill("SIGKILL") };
}

// The isolation ceiling: workerd alone takes the HTTP request and runs the app in a Worker
// Loader isolate of its own, as any design that keeps one isolate per app must, with no control
// plane at all (no auth, no checks, no Node). Each request reaches the isolate by JS RPC (the
// cheaper of RPC and fetch measured here), which builds the Request, runs the app's fetch and
// hands back the body, as the shim does. No design with per-app isolates serves an op faster
// than this on the same machine.
const CEILING_FRONT = `export default { async fetch(request, env) {
  const worker = env.LOADER.get("app", () => ({ compatibilityDate: "2025-09-01", mainModule: "entry.js", modules: { "entry.js": env.ENTRY, "app.js": env.APP } }));
  const body = await worker.getEntrypoint("Run").run(request.method, request.url, await request.text());
  return new Response(body, { headers: { "content-type": "application/json" } });
} };`;
const CEILING_ENTRY = `import { WorkerEntrypoint } from "cloudflare:workers";
import app from "./app.js";
export default { fetch: () => new Response("not here", { status: 404 }) };
export class Run extends WorkerEntrypoint {
  async run(method, url, body) { return (await app.fetch(new Request(url, { method, body }), {}, this.ctx)).text(); }
}`;

/** workerd serving `module` from a loader isolate behind a front worker (see CEILING_FRONT). */
export function loaderCeiling(dir: string, module: string): Promise<{ url: string; pid: number; stop: () => void }> {
  return serveFront(dir, "ceiling", { front: CEILING_FRONT, entry: CEILING_ENTRY, app: module }, loaderService, ["--experimental"]);
}

/** The "main" service of a front that reaches the app through a Worker Loader. */
const loaderService = (file: (key: string) => string): string => `
    (name = "main", worker = (
      modules = [(name = "front.js", esModule = embed "${file("front")}")], compatibilityDate = "2025-09-01", compatibilityFlags = ["experimental"],
      bindings = [ (name = "LOADER", workerLoader = ()), (name = "ENTRY", text = embed "${file("entry")}"), (name = "APP", text = embed "${file("app")}") ] ))`;

// The floor under a new revision's first call: the same front, but each call names a revision
// the loader has not built (`?revision=N`, its module differing as an edit's does), so workerd
// builds a fresh isolate for it, as a new revision's first call must. Almost all of it is V8
// making the isolate and its global scope (perf: Isolate::New and Context::New).
const FRESH_FRONT = `export default { async fetch(request, env) {
  const revision = new URL(request.url).searchParams.get("revision");
  const worker = env.LOADER.get("app:" + revision, () => ({ compatibilityDate: "2025-09-01", mainModule: "entry.js", modules: { "entry.js": env.ENTRY, "app.js": env.APP.replace("value: 1", "value: " + revision) } }));
  const body = await worker.getEntrypoint("Run").run(request.method, request.url, await request.text());
  return new Response(body, { headers: { "content-type": "application/json" } });
} };`;

/** workerd building a fresh loader isolate of `module` for each `?revision=N` it has not seen (see FRESH_FRONT). */
export function freshIsolates(dir: string, module: string): Promise<{ url: string; pid: number; stop: () => void }> {
  return serveFront(dir, "fresh", { front: FRESH_FRONT, entry: CEILING_ENTRY, app: module }, loaderService, ["--experimental"]);
}

// The same ceiling with the app configured ahead of time: a Worker of its own in workerd's config,
// reached from the front by a service binding to its RPC entrypoint, not through the loader. A
// design that wrote every app into workerd's config (and restarted or reloaded workerd for each
// new revision) would pay this hop; it costs about what the loader's does (executor README).
const STATIC_FRONT = `export default { async fetch(request, env) {
  const body = await env.APP.run(request.method, request.url, await request.text());
  return new Response(body, { headers: { "content-type": "application/json" } });
} };`;

/** workerd serving `module` from a Worker of its own behind a front worker (see STATIC_FRONT). */
export function staticCeiling(dir: string, module: string): Promise<{ url: string; pid: number; stop: () => void }> {
  return serveFront(dir, "static", { front: STATIC_FRONT, entry: CEILING_ENTRY, app: module }, (file) => `
    (name = "main", worker = (
      modules = [(name = "front.js", esModule = embed "${file("front")}")], compatibilityDate = "2025-09-01",
      bindings = [ (name = "APP", service = (name = "app", entrypoint = "Run")) ] )),
    (name = "app", worker = (
      modules = [(name = "entry.js", esModule = embed "${file("entry")}"), (name = "app.js", esModule = embed "${file("app")}")], compatibilityDate = "2025-09-01" ))`);
}

/** Writes `files` as `<name>-<key>.js` and serves `services` (whose "main" takes HTTP) until it listens. */
async function serveFront(
  dir: string,
  name: string,
  files: Record<string, string>,
  services: (file: (key: string) => string) => string,
  flags: string[] = [],
): Promise<{ url: string; pid: number; stop: () => void }> {
  const port = await freePort();
  for (const [key, text] of Object.entries(files)) writeFileSync(join(dir, `${name}-${key}.js`), text);
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [${services((key) => `${name}-${key}.js`)} ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);`;
  const { pid, stop } = await serveWorkerd(dir, `${name}.capnp`, config, flags);
  return { url: `http://127.0.0.1:${port}`, pid, stop };
}

/** A bare Fastify route answering `{ok: true}`: what `GET /healthz` is compared to. */
export async function bareFastify(): Promise<{ url: string; stop: () => Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get("/healthz", () => ({ ok: true }));
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  return { url, stop: () => app.close() };
}

export interface Brickyard {
  url: string;
  built: BuiltApp;
  stop: () => Promise<void>;
}

/** Brickyard on SQLite under `dataDir`, or on the PostgreSQL database at `databaseUrl`. */
export async function brickyard(dataDir: string, databaseUrl: string | null, env: Record<string, string> = {}): Promise<Brickyard> {
  const config = loadConfig({ ...process.env, PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, ...(databaseUrl === null ? {} : { DATABASE_URL: databaseUrl }), ...env });
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir });
  await migrate(store);
  // Every log line is still made and serialized; only the write to a terminal is spared.
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const built = await buildApp({ config, store, logStream: sink, background: false });
  const url = await built.http.listen({ port: 0, host: "127.0.0.1" });
  config.baseUrl = url;
  return { url, built, stop: () => built.http.close() };
}
