import { connect, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { within } from "./helpers/eventually.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/**
 * Every connection is a file descriptor for as long as it stays open, and an idle one may wait
 * for the headers timeout: one client opening connections took every descriptor the process had.
 * MAX_CONNECTIONS=100 here, so one network may hold 10. Loopback is a /8 on Linux, so 127.0.0.x
 * for several x are several client networks of one machine.
 */
const HOLD = 10;

function open(server: TestServer, from: string): Promise<Socket> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ port: Number(port), host: "127.0.0.1", localAddress: from }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** GET /healthz on a connection of its own from `from`, closed after. */
async function probe(server: TestServer, from: string): Promise<{ status: number; body: string; closed: boolean }> {
  const socket = await open(server, from);
  try {
    return await healthz(socket);
  } finally {
    socket.destroy();
  }
}

/** Sends GET /healthz on `socket` and reads until the server closes it or answers in full. */
function healthz(socket: Socket): Promise<{ status: number; body: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = "";
    const done = (closed: boolean) => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.split("\r\n\r\n")[1] ?? "", closed });
    };
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? -1);
      const body = text.split("\r\n\r\n")[1];
      if (!socket.destroyed && body !== undefined && Buffer.byteLength(body) === length && !/connection: close/i.test(text)) done(false);
    });
    socket.on("close", () => done(true));
    socket.on("error", () => undefined);
    socket.write("GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n");
  });
}

describe("connections per client network and in all", () => {
  let server: TestServer;
  const sockets: Socket[] = [];
  const held = async (from: string): Promise<Socket> => {
    const socket = await open(server, from);
    sockets.push(socket);
    return socket;
  };
  beforeAll(async () => {
    server = await startServer({ env: { MAX_CONNECTIONS: "100" } });
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    // The next case starts with none held: each closes on the server's side too.
    await within(5_000, () => probe(server, "127.0.0.1"), (r) => r.status === 200);
  });
  afterAll(async () => server.close());

  it("a network's connection past its tenth is answered 429 too_many_requests in the envelope and closed; another network's is served", async () => {
    for (let i = 0; i < HOLD; i++) await held("127.0.0.1");
    const refused = await healthz(await held("127.0.0.1"));
    expect(refused.status, refused.body).toBe(429);
    expect(JSON.parse(refused.body).error.kind).toBe("too_many_requests");
    expect(refused.closed).toBe(true);
    const other = await healthz(await held("127.0.0.2"));
    expect(other.status, other.body).toBe(200);
    // One of the ten closed: the network may open another.
    sockets[0]?.destroy();
    await within(5_000, () => probe(server, "127.0.0.1"), (r) => r.status === 200);
  });

  it("past the total, a connection is closed on arrival, from any network", async () => {
    for (let network = 1; network <= 100 / HOLD; network++) for (let i = 0; i < HOLD; i++) await held(`127.0.0.${network}`);
    const dropped = await healthz(await held("127.0.0.99"));
    expect(dropped).toEqual({ status: 0, body: "", closed: true });
  });
});

describe("connections behind a trusted proxy", () => {
  let server: TestServer;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    server = await startServer({ env: { MAX_CONNECTIONS: "100", TRUST_PROXY: "1" } });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await server.close();
  });

  it("are not counted per network: they all come from the proxy's address", async () => {
    for (let i = 0; i < HOLD; i++) sockets.push(await open(server, "127.0.0.1"));
    const next = await open(server, "127.0.0.1");
    sockets.push(next);
    const answered = await healthz(next);
    expect(answered.status, answered.body).toBe(200);
  });
});
