import { afterAll, beforeAll, expect, it } from "vitest";
import { SMTPServer } from "smtp-server";
import { createUser } from "./helpers/accounts.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

interface Received {
  to: string[];
  data: string;
}

/**
 * SMTP_URL set: every outbox row is also sent, to a real SMTP server on loopback (smtp-server),
 * and marked sent; a server that refuses leaves the row unsent with the reason.
 */
describeEachDialect("mail over SMTP", (dialect) => {
  let smtp: SMTPServer;
  let port = 0;
  let server: TestServer;
  const inbox: Received[] = [];
  const waiting: ((message: Received) => void)[] = [];
  let refuse = false;

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      onRcptTo(address, _session, callback) {
        callback(refuse ? Object.assign(new Error("mailbox unavailable"), { responseCode: 550 }) : undefined);
      },
      onData(stream, session, callback) {
        let data = "";
        stream.setEncoding("utf8");
        stream.on("data", (chunk: string) => (data += chunk));
        stream.on("end", () => {
          const message = { to: session.envelope.rcptTo.map((r) => r.address), data };
          inbox.push(message);
          for (const wake of waiting.splice(0)) wake(message);
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
    port = (smtp.server.address() as { port: number }).port;
    server = await startServer({ dialect, env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    await server?.close();
    await new Promise<void>((resolve) => smtp.close(resolve));
  });

  it("sends the sign-up verification mail through the SMTP server and marks the outbox row sent", async () => {
    const arrived = new Promise<Received>((resolve) => waiting.push(resolve));
    const person = await createUser(server);
    const message = await arrived;
    expect(message.to).toEqual([person.email]);
    expect(message.data).toContain("Subject: Confirm your email address for Brickyard");
    expect(message.data).toMatch(/verify-email\?token=/);
    await server.ctx.mailer.settled();
    const [row] = await server.ctx.mailer.to(person.email);
    expect(row?.sentAt).not.toBeNull();
    expect(row?.error).toBeNull();
  });

  it("keeps a refused message in the outbox, unsent, with the server's reason", async () => {
    refuse = true;
    try {
      const person = await createUser(server);
      await server.ctx.mailer.settled();
      const [row] = await server.ctx.mailer.to(person.email);
      expect(row?.sentAt).toBeNull();
      expect(row?.error).toMatch(/550|mailbox unavailable/);
    } finally {
      refuse = false;
    }
  });
});
