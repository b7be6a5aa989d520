import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./helpers/server.ts";

/**
 * A request sent slowly enough held its connection for ever (Fastify switches Node's request
 * timeout off): one client trickling bodies could hold every file descriptor the process has.
 * Past REQUEST_TIMEOUT_MS (1 s here) the request is answered 408 in the envelope and closed.
 */
describe("a request that takes too long to arrive", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { REQUEST_TIMEOUT_MS: "1000" } });
  });
  afterAll(async () => server.close());

  it("is answered 408 request timeout and its connection closed, while the body is still coming", async () => {
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (answer += chunk));
    // The head and one byte of a 100-byte body; a byte more every 100 ms, never the rest.
    socket.write("POST /api/pair/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
    const trickle = setInterval(() => socket.writable && socket.write(" "), 100);
    const started = performance.now();
    await new Promise<void>((resolve) => socket.on("close", () => resolve()));
    clearInterval(trickle);
    expect(/^HTTP\/1\.1 408 /.exec(answer)?.[0]).toBe("HTTP/1.1 408 ");
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toMatchObject({ ok: false, error: { kind: "invalid_request" } });
    // Closed by the timeout (checked every quarter of it), not by anything slower.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
