import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

const ID = /^[A-Za-z0-9_-]{22}$/;

/**
 * Anonymous visitors of an app's custom domain (DECISIONS §12): each has an id, kept in a
 * first-party cookie the domain's page sets, and their own store. The app's frame is sandboxed
 * (an opaque origin that sends no cookies), so the page hands it a pass instead: the id with a
 * MAC over the app and the id, which the frame sends with each op call and which works for that
 * app only. Holding a pass is being that visitor, as holding the cookie would be.
 */
export class VisitorPasses {
  constructor(private readonly key: Buffer) {}

  /** A new visitor's id: 128 random bits. */
  static newId(): string {
    return randomBytes(16).toString("base64url");
  }

  static isId(value: unknown): value is string {
    return typeof value === "string" && ID.test(value);
  }

  pass(appId: string, visitorId: string): string {
    return `${visitorId}.${this.mac(appId, visitorId)}`;
  }

  /** The visitor a pass names for this app, or null for anything else. */
  verify(appId: string, pass: string): string | null {
    const [id, mac, extra] = pass.split(".");
    if (extra !== undefined || !VisitorPasses.isId(id) || mac === undefined) return null;
    const expected = Buffer.from(this.mac(appId, id));
    const given = Buffer.from(mac);
    return given.length === expected.length && timingSafeEqual(given, expected) ? id : null;
  }

  private mac(appId: string, visitorId: string): string {
    return createHmac("sha256", this.key).update(`${appId}\0${visitorId}`).digest("base64url");
  }
}
