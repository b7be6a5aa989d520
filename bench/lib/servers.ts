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
import { workerdBinary } from "../../src/executor/workerd-config.ts";
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
  writeFileSync(
    join(dir, "bare.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = (modules = [(name = "bare.js", esModule = embed "bare.js")], compatibilityDate = "2025-09-01")) ],
  sockets = [ (name = "http", address = "${address}", http = (), service = "main") ],
);`,
  );
  const child = spawn(workerdBinary(), ["serve", "--control-fd=3", join(dir, "bare.capnp")], { stdio: ["ignore", "ignore", "inherit", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    child.stdio[3]?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes('"listen"')) resolve();
    });
    child.once("exit", () => reject(new Error("bare workerd exited")));
  });
  if (child.pid === undefined) throw new Error("bare workerd has no pid");
  return { pid: child.pid, stop: () => child.kill("SIGKILL") };
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
export async function brickyard(dataDir: string, databaseUrl: string | null): Promise<Brickyard> {
  const config = loadConfig({ ...process.env, PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, ...(databaseUrl === null ? {} : { DATABASE_URL: databaseUrl }) });
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir });
  await migrate(store);
  // Every log line is still made and serialized; only the write to a terminal is spared.
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const built = await buildApp({ config, store, logStream: sink, background: false });
  const url = await built.http.listen({ port: 0, host: "127.0.0.1" });
  config.baseUrl = url;
  return { url, built, stop: () => built.http.close() };
}
