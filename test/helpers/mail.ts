import type { TestServer } from "./server.ts";
import { makeUser, type FixtureUser } from "./apps.ts";

/** The newest link matching `pattern` in mail to `address`, as a path on this server. */
export async function mailedLink(server: TestServer, address: string, pattern: RegExp): Promise<string> {
  const mails = await server.ctx.mailer.to(address);
  const link = mails.map((mail) => pattern.exec(mail.text)?.[0]).find((found) => found !== undefined);
  if (link === undefined) throw new Error(`no link like ${pattern.source} mailed to ${address}`);
  return link.replace(server.config.baseUrl, "");
}

export const VERIFY_LINK = /https?:\/\/\S+\/verify-email\?token=[0-9A-Za-z]+/;

/** A user who followed the verification link mailed to their address (through the real page). */
export async function verifiedUser(server: TestServer): Promise<FixtureUser & { email: string }> {
  const user = await makeUser(server);
  const email = `${user.handle}@example.test`;
  await server.ctx.emailVerification.start({ id: user.id, email });
  const page = await server.client.get(await mailedLink(server, email, VERIFY_LINK), { headers: { accept: "text/html" } });
  if (page.status !== 200) throw new Error(`verification page answered ${page.status}`);
  return { ...user, email };
}
