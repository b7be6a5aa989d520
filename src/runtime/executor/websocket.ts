import { randomBytes, randomFillSync } from "node:crypto";
import { request } from "node:http";
import type { Socket } from "node:net";

/**
 * A WebSocket client for exactly one peer: the supervisor of a workerd process we started, on a
 * unix socket in a private directory. Binary messages only, no extensions, no redirects, no
 * proxies. It exists because every op call and binding call crosses this socket, and undici's
 * WHATWG WebSocket (event objects, stream parser, a crypto call per frame for its mask) cost
 * more Node CPU per frame than the rest of the call.
 */
export class ChannelSocket {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private fragments: Buffer[] = [];
  private closed = false;
  /** Frames sent since the last flush are held in the socket (corked) until the loop's check phase. */
  private corked = false;
  onMessage: (data: Buffer) => void = () => undefined;
  /** Called once, whichever side ends the connection. */
  onClose: () => void = () => undefined;

  /** Wraps a socket whose upgrade has completed (connect's; a test's own). */
  static over(socket: Socket): ChannelSocket {
    return new ChannelSocket(socket);
  }

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("close", () => this.end());
    socket.on("error", () => this.end());
  }

  /** Opens `path` on the unix socket with the WebSocket handshake; rejects on anything but 101. */
  static connect(socketPath: string, path: string, timeoutMs: number): Promise<ChannelSocket> {
    return new Promise((resolve, reject) => {
      const key = randomBytes(16).toString("base64");
      const req = request({
        socketPath,
        path,
        headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": key },
        timeout: timeoutMs,
      });
      req.on("upgrade", (_res, socket, head) => {
        const ws = ChannelSocket.over(socket);
        if (head.length > 0) ws.receive(head);
        resolve(ws);
      });
      req.on("response", (res) => {
        res.resume();
        reject(new Error(`the executor refused the channel (${res.statusCode ?? "no status"})`));
      });
      req.on("timeout", () => req.destroy(new Error(`the executor channel did not open within ${timeoutMs} ms`)));
      req.on("error", reject);
      req.end();
    });
  }

  /** Sends one binary message (a single masked frame, as a client must). */
  send(data: Buffer): void {
    if (this.closed) return;
    const length = data.length;
    const headerLength = length < 126 ? 2 : length < 65_536 ? 4 : 10;
    const frame = Buffer.allocUnsafe(headerLength + 4 + length);
    frame[0] = 0x82; // FIN, binary
    if (length < 126) frame[1] = 0x80 | length;
    else if (length < 65_536) {
      frame[1] = 0x80 | 126;
      frame.writeUInt16BE(length, 2);
    } else {
      frame[1] = 0x80 | 127;
      frame.writeBigUInt64BE(BigInt(length), 2);
    }
    maskInto(frame, headerLength, data);
    this.write(frame);
  }

  /**
   * Every frame written in one turn of the event loop goes to the kernel in one writev, once the
   * loop's I/O callbacks have run (setImmediate): under load one poll phase starts several calls,
   * and a write per frame cost Node a syscall and workerd a wake-up each (measured: ~2 frames a
   * flush under eight clients, Node's CPU per op call 8 % lower). The frame waits at most for
   * the rest of that phase: with an immediate pending the loop polls without blocking.
   */
  private write(frame: Buffer): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      setImmediate(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(frame);
  }

  close(): void {
    if (this.closed) return;
    // A close frame with no payload (masked, empty), then end our half.
    this.socket.end(Buffer.from([0x88, 0x80, ...nextMask()]));
    this.end();
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroySoon();
    this.onClose();
  }

  private receive(chunk: Buffer): void {
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    while (!this.closed) {
      const frame = this.nextFrame();
      if (frame === null) return;
      this.handle(frame.opcode, frame.fin, frame.payload);
    }
  }

  /** Takes one whole frame off the buffer, or null if it has not all arrived. */
  private nextFrame(): { opcode: number; fin: boolean; payload: Buffer } | null {
    if (this.bufferedBytes < 2) return null;
    // The header is at most 10 bytes; read it before joining chunks, so a large frame arriving
    // in many chunks is joined once, when it is complete, not once per chunk.
    const head = this.joined(Math.min(10, this.bufferedBytes));
    const b0 = head[0] ?? 0;
    const b1 = head[1] ?? 0;
    let offset = 2;
    let length = b1 & 0x7f;
    if (length === 126) {
      if (head.length < 4) return null;
      length = head.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (head.length < 10) return null;
      length = Number(head.readBigUInt64BE(2));
      offset = 10;
    }
    // The server never masks; a masked frame from it is a protocol error.
    if ((b1 & 0x80) !== 0) {
      this.protocolError();
      return null;
    }
    if (this.bufferedBytes < offset + length) return null;
    const data = this.joined(this.bufferedBytes);
    const payload = data.subarray(offset, offset + length);
    const rest = data.subarray(offset + length);
    this.buffered = rest.length === 0 ? [] : [rest];
    this.bufferedBytes = rest.length;
    return { opcode: b0 & 0x0f, fin: (b0 & 0x80) !== 0, payload };
  }

  /** The buffered bytes as one buffer holding at least `bytes` of them (joined if need be). */
  private joined(bytes: number): Buffer {
    const first = this.buffered[0];
    if (first !== undefined && first.length >= bytes) return first;
    const all = Buffer.concat(this.buffered, this.bufferedBytes);
    this.buffered = [all];
    return all;
  }

  private handle(opcode: number, fin: boolean, payload: Buffer): void {
    switch (opcode) {
      case 0x0: // continuation
      case 0x1: // text
      case 0x2: {
        this.fragments.push(payload);
        if (!fin) return;
        const message = this.fragments.length === 1 ? payload : Buffer.concat(this.fragments);
        this.fragments = [];
        this.onMessage(message);
        return;
      }
      case 0x8: // close: answer it, then we are done
        this.close();
        return;
      case 0x9: {
        // ping: answer with a pong carrying the same payload
        const pong = Buffer.allocUnsafe(2 + 4 + payload.length);
        pong[0] = 0x8a;
        pong[1] = 0x80 | payload.length;
        maskInto(pong, 2, payload);
        this.write(pong);
        return;
      }
      case 0xa: // pong
        return;
      default:
        this.protocolError();
    }
  }

  private protocolError(): void {
    this.socket.destroy();
    this.end();
  }
}

// Masking keys come from a pool filled by one crypto call per 1,024 frames, not one per frame.
const maskPool = Buffer.alloc(4096);
let maskOffset = maskPool.length;

function nextMask(): Buffer {
  if (maskOffset === maskPool.length) {
    randomFillSync(maskPool);
    maskOffset = 0;
  }
  const mask = maskPool.subarray(maskOffset, maskOffset + 4);
  maskOffset += 4;
  return mask;
}

/** Writes the 4-byte mask at `at` and the masked `data` after it. */
function maskInto(frame: Buffer, at: number, data: Buffer): void {
  const mask = nextMask();
  mask.copy(frame, at);
  const start = at + 4;
  const m0 = mask[0] ?? 0;
  const m1 = mask[1] ?? 0;
  const m2 = mask[2] ?? 0;
  const m3 = mask[3] ?? 0;
  const n = data.length;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    frame[start + i] = (data[i] ?? 0) ^ m0;
    frame[start + i + 1] = (data[i + 1] ?? 0) ^ m1;
    frame[start + i + 2] = (data[i + 2] ?? 0) ^ m2;
    frame[start + i + 3] = (data[i + 3] ?? 0) ^ m3;
  }
  for (; i < n; i++) frame[start + i] = (data[i] ?? 0) ^ (mask[i & 3] ?? 0);
}
