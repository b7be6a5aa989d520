import { createSocket, type Socket } from "node:dgram";
import * as packet from "dns-packet";

/**
 * A DNS server on loopback (UDP), answering TXT questions from a table the test edits: what a
 * domain's owner does at their DNS provider. node:dns's resolver talks to it for real
 * (DNS_RESOLVER). `silent` makes it drop every question, as a provider that times out.
 */
export interface TestDns {
  /** `host:port`, for DNS_RESOLVER. */
  address: string;
  setTxt(name: string, values: string[]): void;
  clear(name: string): void;
  silent: boolean;
  /** Answer SERVFAIL to everything. */
  failing: boolean;
  /** Questions asked so far, by name. */
  asked: string[];
  close(): Promise<void>;
}

export async function startDns(): Promise<TestDns> {
  const records = new Map<string, string[]>();
  const socket: Socket = createSocket("udp4");
  const server: TestDns = {
    address: "",
    setTxt: (name, values) => void records.set(name.toLowerCase(), values),
    clear: (name) => void records.delete(name.toLowerCase()),
    silent: false,
    failing: false,
    asked: [],
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
  socket.on("message", (message, remote) => {
    if (server.silent) return;
    let query: packet.Packet;
    try {
      query = packet.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (question === undefined) return;
    server.asked.push(question.name);
    const values = records.get(question.name.toLowerCase());
    const answer: packet.Packet = {
      id: query.id,
      type: "response",
      // RD copied, RA set; RCODE 2 is SERVFAIL, 3 NXDOMAIN.
      flags: (server.failing ? 2 : values === undefined ? 3 : 0) | packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE,
      questions: [question],
      answers:
        server.failing || values === undefined || question.type !== "TXT"
          ? []
          : values.map((value) => ({ type: "TXT" as const, name: question.name, ttl: 1, class: "IN" as const, data: [Buffer.from(value)] })),
    };
    socket.send(packet.encode(answer), remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  server.address = `127.0.0.1:${socket.address().port}`;
  return server;
}
