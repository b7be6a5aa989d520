import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChannelSocket } from "../src/runtime/executor/websocket.ts";

/** The payloads of the masked client frames in `bytes` (each under 126 bytes, as this test sends). */
function unmaskedPayloads(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = (bytes[at + 1] ?? 0) & 0x7f;
    const mask = bytes.subarray(at + 2, at + 6);
    const payload = Buffer.from(bytes.subarray(at + 6, at + 6 + length).map((b, i) => b ^ (mask[i & 3] ?? 0)));
    out.push(payload.toString());
    at += 6 + length;
  }
  return out;
}

/** The channel's client end over a plain unix socket pair (the handshake is not what is tested). */
describe("executor: the channel socket's writes", () => {
  let dir: string;
  let server: Server;
  let peer: Promise<Socket>;
  let client: Socket;
  let ws: ChannelSocket;
  const writes: number[] = []; // chunks per call of the socket's _write / _writev

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "channel-socket-"));
    const path = join(dir, "s");
    peer = new Promise((resolve) => {
      server = createServer(resolve);
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    client = connect(path);
    await new Promise<void>((resolve) => client.once("connect", resolve));
    const socket = client as Socket & { _write: (...a: unknown[]) => void; _writev: (chunks: unknown[], cb: unknown) => void };
    const write = socket._write.bind(socket);
    const writev = socket._writev.bind(socket);
    socket._write = (...args) => {
      writes.push(1);
      write(...args);
    };
    socket._writev = (chunks, cb) => {
      writes.push(chunks.length);
      writev(chunks, cb);
    };
    ws = ChannelSocket.over(client);
  });
  afterAll(() => {
    ws.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function received(socket: Socket, frames: number): Promise<string[]> {
    let bytes = Buffer.alloc(0);
    for (;;) {
      const got = unmaskedPayloads(bytes);
      if (got.length >= frames && bytes.length > 0) return got;
      bytes = Buffer.concat([bytes, await new Promise<Buffer>((resolve) => socket.once("data", resolve))]);
    }
  }

  it("sends the frames of one turn in one write, in order, and a frame alone without waiting for another", async () => {
    const remote = await peer;
    for (let i = 0; i < 5; i++) ws.send(Buffer.from(`frame ${i}`));
    expect(writes).toEqual([]); // held until the loop's I/O callbacks have run
    expect(await received(remote, 5)).toEqual(["frame 0", "frame 1", "frame 2", "frame 3", "frame 4"]);
    expect(writes).toEqual([5]);

    ws.send(Buffer.from("alone"));
    expect(await received(remote, 1)).toEqual(["alone"]);
    expect(writes.reduce((a, b) => a + b, 0)).toBe(6);
    expect(writes).toHaveLength(2);
  });
});
