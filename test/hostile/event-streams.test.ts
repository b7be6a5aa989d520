import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STREAMS_PER_HOLDER } from "../../src/http/stream-quota.ts";
import { makeUser } from "../helpers/apps.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

// GET /app/{id}/events is open to anyone who may view the app, and a stream stays open for as
// long as its client likes. Nothing bounded them: one client opening streams would take every
// file descriptor of the process, and then the store, workerd's sockets and everyone else fail.
const APP = `export const manifest = { id: "streamed", routes: { ping: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: "pong" }); } };`;

/** A stream on a socket of its own; `answer` is the status line's code and the head's text. */
function openStream(server: TestServer, path: string, token?: string): { socket: Socket; answer: Promise<{ status: number; head: string }> } {
  const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
  socket.on("error", () => undefined);
  socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n${token === undefined ? "" : `authorization: Bearer ${token}\r\n`}\r\n`);
  const answer = new Promise<{ status: number; head: string }>((resolve, reject) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      // A stream's head and its first event, or a refusal's whole (small) answer.
      if (!text.includes("\r\n\r\n") || !(text.includes("event: hello") || text.includes('"ok":false'))) return;
      socket.off("data", onData);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), head: text });
    };
    socket.on("data", onData);
    socket.once("close", () => reject(new Error(`the socket closed before an answer: ${text}`)));
  });
  return { socket, answer };
}

describe("hostile: event streams held open", () => {
  let server: TestServer;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await server.close();
  });

  it("one address keeps at most its share of streams; a closed one frees a place; a signed-in person's are counted apart", async () => {
    const { id } = (await server.client.post("/app", { module: APP })).body as { id: string };
    const streams = Array.from({ length: STREAMS_PER_HOLDER }, () => openStream(server, `/app/${id}/events`));
    sockets.push(...streams.map((stream) => stream.socket));
    const answers = await Promise.all(streams.map((stream) => stream.answer));
    expect(answers.map((answer) => answer.status)).toEqual(Array(STREAMS_PER_HOLDER).fill(200));
    expect(server.ctx.streams.size).toEqual({ open: STREAMS_PER_HOLDER, holders: 1 });

    const refused = openStream(server, `/app/${id}/events`);
    sockets.push(refused.socket);
    const { status, head } = await refused.answer;
    expect(status).toBe(429);
    expect(JSON.parse(head.slice(head.indexOf("{")))).toMatchObject({ ok: false, error: { kind: "too_many_requests" } });

    const person = await makeUser(server);
    const theirs = openStream(server, `/app/${id}/events`, person.token);
    sockets.push(theirs.socket);
    expect((await theirs.answer).status).toBe(200);

    streams[0]?.socket.destroy();
    await expect.poll(() => server.ctx.streams.size.open).toBe(STREAMS_PER_HOLDER);
    const again = openStream(server, `/app/${id}/events`);
    sockets.push(again.socket);
    expect((await again.answer).status).toBe(200);

    for (const socket of sockets) socket.destroy();
    await expect.poll(() => server.ctx.streams.size).toEqual({ open: 0, holders: 0 });
  });

  it("a client that leaves while its stream is being checked takes no place and leaves nothing behind", async () => {
    const { id } = (await server.client.post("/app", { module: APP })).body as { id: string };
    // The app's read waits until the server has seen the client go: the moment a real client may pick.
    const apps = server.ctx.apps;
    const load = apps.load.bind(apps);
    let serverSide: Socket | null = null;
    server.http.server.once("connection", (socket: Socket) => (serverSide = socket));
    const checks: Promise<unknown>[] = [];
    let reached: () => void = () => undefined;
    const checking = new Promise<void>((resolve) => (reached = resolve));
    let left: () => void = () => undefined;
    const gone = new Promise<void>((resolve) => (left = resolve));
    apps.load = (...args) => {
      reached();
      const check = gone.then(() => load(...args));
      checks.push(check);
      return check;
    };
    try {
      const stream = openStream(server, `/app/${id}/events`);
      stream.answer.catch(() => undefined);
      await checking;
      const closed = new Promise((resolve) => serverSide?.once("close", resolve));
      stream.socket.destroy();
      await closed;
      left();
      await Promise.all(checks);
      // The handler goes on in the same turn as the read's answer; one more turn and it is done.
      await new Promise((resolve) => setImmediate(resolve));
      expect(server.ctx.streams.size.open).toBe(0);
    } finally {
      apps.load = load;
    }
  });

  it("a stream refused by the app's access takes no place", async () => {
    const owner = await makeUser(server);
    const { id } = (await server.client.post("/app", { module: APP }, { token: owner.token })).body as { id: string };
    const stranger = openStream(server, `/app/${id}/events`);
    sockets.push(stranger.socket);
    expect((await stranger.answer).status).toBe(403);
    expect(server.ctx.streams.size.open).toBe(0);
  });
});
