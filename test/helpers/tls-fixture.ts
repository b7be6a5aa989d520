import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpsServer, type Server } from "node:https";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TlsFixture {
  /** PEM of the CA that signed the fixture's certificate; given to the executor as a test CA. */
  caPem: string;
  port: number;
  /** Hostnames the certificate covers. */
  hosts: string[];
  close(): Promise<void>;
}

type Handler = Parameters<typeof createHttpsServer>[1];

/**
 * A loopback HTTPS server with a throwaway CA (openssl), standing in for public origins in
 * egress tests: the network is never reached.
 */
export async function startTlsFixture(hosts: string[], handler: Handler): Promise<TlsFixture> {
  const dir = mkdtempSync(join(tmpdir(), "brickyard-tls-"));
  const run = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Brickyard test CA");
  run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", `/CN=${hosts[0] ?? "fixture.test"}`);
  writeFileSync(join(dir, "san.ext"), `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(",")}\n`);
  run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "san.ext");
  const server: Server = createHttpsServer({ key: readFileSync(join(dir, "leaf.key")), cert: readFileSync(join(dir, "leaf.pem")) }, handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("fixture did not bind");
  const caPem = readFileSync(join(dir, "ca.pem"), "utf8");
  rmSync(dir, { recursive: true, force: true });
  return {
    caPem,
    port: address.port,
    hosts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Canary {
  port: number;
  /** Connections accepted so far, on any of its addresses. */
  connections(): number;
  close(): Promise<void>;
}

/** A TCP listener on 127.0.0.1 and ::1 that only counts who connects to it. */
export async function startCanary(): Promise<Canary> {
  let count = 0;
  const servers: TcpServer[] = [];
  const v4 = createTcpServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => v4.listen(0, "127.0.0.1", resolve));
  servers.push(v4);
  const address = v4.address();
  if (address === null || typeof address === "string") throw new Error("canary did not bind");
  const v6 = createTcpServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => v6.listen(address.port, "::1", resolve).once("error", () => resolve()));
  if (v6.listening) servers.push(v6);
  return {
    port: address.port,
    connections: () => count,
    close: async () => {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
}
