import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";
import { apiError } from "../../errors/index.ts";

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A hostname as DECISIONS §12 keeps it: lower-cased, its IDNA ASCII form (a look-alike in another
 * script becomes its `xn--` form, which is what DNS and TLS see), no trailing dot; at least two
 * labels, never an address, `localhost`, the service's own host or a name under it. Anything else
 * is 400 `invalid_domain`.
 */
export function normaliseHostname(raw: string, serviceHost: string): string {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 300) throw apiError("invalid_domain", "hostname must be a DNS name like app.example.com");
  const trimmed = raw.trim().replace(/\.$/, "");
  if (trimmed.includes(":") || trimmed.includes("/") || trimmed.includes("@") || ipaddr.isValid(trimmed) || /^\[.*\]$/.test(trimmed)) {
    throw apiError("invalid_domain", "a custom domain is a DNS name, not an address, a port or a URL");
  }
  // The URL host parser below stops at these or decodes them ("a.com#x" and "%61.com" read as
  // a.com): a name that holds one is refused, not cut to another name.
  if (/[#?\\%\s]/.test(trimmed)) throw apiError("invalid_domain", `${JSON.stringify(trimmed)} is not a DNS name: it holds a character no name has`);
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (ascii === "" || ascii.length > 253) throw apiError("invalid_domain", `${trimmed} is not a valid DNS name`);
  const labels = ascii.split(".");
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) throw apiError("invalid_domain", `${trimmed} is not a valid DNS name of at least two labels`);
  // Every part numeric is an address in disguise (inet_aton reads 1.2.3 as one).
  if (labels.every((label) => /^\d+$/.test(label)) || ipaddr.isValid(ascii)) throw apiError("invalid_domain", "a custom domain is a DNS name, not an address");
  if (ascii === "localhost" || ascii.endsWith(".localhost")) throw apiError("invalid_domain", "localhost cannot be a custom domain");
  const own = serviceHost.toLowerCase();
  if (ascii === own || ascii.endsWith(`.${own}`)) throw apiError("invalid_domain", `${ascii} is this service's own host`);
  return ascii;
}

/** A request's `Host` as a lookup key: lower-cased, no port, no trailing dot; null when it cannot be a custom domain. */
export function hostKey(host: string | undefined): string | null {
  if (host === undefined || host.length === 0 || host.length > 260) return null;
  const name = host.replace(/:\d+$/, "").replace(/\.$/, "").toLowerCase();
  return name.includes("[") ? null : name;
}
