import type { Server } from "node:http";
import type { Socket } from "node:net";
import { apiError } from "../errors/index.ts";
import { addCount } from "../lib/counts.ts";
import { NETWORK_SHARE, networkOf } from "./rate-limit/network.ts";

/** How long a refused connection is given to read its answer before it is closed from here. */
const REFUSED_LINGER_MS = 2_000;

/**
 * Bounds the sockets clients hold. Every connection is a file descriptor until it closes, and an
 * idle one may wait up to the headers timeout: without a bound, one client opening connections
 * took every descriptor, and then the store, workerd's sockets and every other client failed.
 *
 * - All of them: `total` (Node's `maxConnections`: a connection past it is closed on arrival).
 * - One client network (networkOf: an IPv4 address, an IPv6 /64): a tenth of the total. Its next
 *   connection is answered 429 `too_many_requests` in the envelope and closed, before any request
 *   on it is read, so nothing it asks runs. Not behind a trusted proxy, whose connections all come
 *   from the proxy's own address: there the proxy bounds its clients' connections.
 */
export function capConnections(server: Server, caps: { total: number; perNetwork: boolean }): void {
  server.maxConnections = caps.total;
  if (!caps.perNetwork) return;
  const perNetwork = Math.max(1, Math.floor(caps.total / NETWORK_SHARE));
  const open = new Map<string, number>();
  // Node's HTTP server reads a connection from its own "connection" listener; ours runs instead,
  // and hands it on only when the network is under its share.
  const downstream = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    const network = networkOf(socket.remoteAddress ?? "");
    if ((open.get(network) ?? 0) >= perNetwork) return refuse(socket, perNetwork);
    addCount(open, network, 1);
    socket.once("close", () => addCount(open, network, -1));
    for (const listener of downstream) listener.call(server, socket);
  });
}

function refuse(socket: Socket, perNetwork: number): void {
  const body = JSON.stringify(apiError("too_many_requests", `this client's network holds ${perNetwork} connections to this instance, the most one network may; reuse or close one`).toEnvelope());
  socket.on("error", () => undefined);
  // What the client sent is read and dropped: closing with it unread would reset the connection,
  // and the client might lose the answer.
  socket.on("data", () => undefined);
  socket.on("end", () => socket.destroy());
  socket.setTimeout(REFUSED_LINGER_MS, () => socket.destroy());
  socket.end(
    `HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
