import type { App } from "./types.ts";

/**
 * Behind a trusted proxy (TRUST_PROXY), Fastify reads the client's address from X-Forwarded-For.
 * A proxy that sends only the standard `Forwarded` header (RFC 7239) gets the same treatment:
 * its `for=` values are copied into X-Forwarded-For before anything reads the address. Which
 * hops are believed is still decided by TRUST_PROXY, from the right, as for X-Forwarded-For.
 */
export function installForwarded(app: App): void {
  app.addHook("onRequest", (request, _reply, done) => {
    const forwarded = request.headers.forwarded;
    if (forwarded !== undefined && request.headers["x-forwarded-for"] === undefined) {
      const hops = forwardedFor(forwarded);
      if (hops.length > 0) request.raw.headers["x-forwarded-for"] = hops.join(", ");
    }
    done();
  });
}

/** The `for=` addresses of a Forwarded header, in order; obfuscated and unknown ones are dropped. */
export function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      let value = pair.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
      // [2001:db8::1]:4711 → 2001:db8::1; 192.0.2.60:4711 → 192.0.2.60
      const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
      if (bracketed?.[1] !== undefined) value = bracketed[1];
      else if (/^[\d.]+:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(":"));
      if (/^[\d.]+$|^[0-9a-f:]+$/i.test(value) && value.includes(value.includes(":") ? ":" : ".")) out.push(value);
    }
  }
  return out;
}
