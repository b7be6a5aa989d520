// Runs INSIDE workerd, in the supervisor. Every fetch() an app makes arrives here (the app
// isolate's globalOutbound), with the app's declared origins in ctx.props. Policy: https only,
// declared origins only, redirects followed here and re-checked (at most 5), the response read
// in full and capped. The network service behind env.INTERNET only connects to public addresses,
// so a name that resolves somewhere private is refused at connect time; the address checks
// below only make the common refusals explain themselves.
import { WorkerEntrypoint } from "cloudflare:workers";

const MAX_REDIRECTS = 5;
const CREDENTIAL_HEADERS = ["authorization", "cookie", "proxy-authorization"];
// What described the body that a redirect to GET drops (the fetch standard's list).
const BODY_HEADERS = ["content-type", "content-encoding", "content-language", "content-location", "content-length"];
const MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

export class Egress extends WorkerEntrypoint {
  async fetch(request) {
    const { appId, origins } = this.ctx.props;
    const body = request.method === "GET" || request.method === "HEAD" ? null : await request.arrayBuffer();
    let url = new URL(request.url);
    let method = request.method;
    let payload = body;
    const headers = new Headers(request.headers);
    for (let hop = 0; ; hop++) {
      const refusal = refuse(url, origins);
      if (refusal) throw await this.refused(appId, url, refusal);
      const init = { method, headers, body: payload, redirect: "manual" };
      let response;
      try {
        response = await this.target(url).fetch(url.href, init);
      } catch {
        throw await this.refused(appId, url, "could not connect (the address is not public, or the host is unreachable)", "EgressFailed");
      }
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location) {
        if (hop === MAX_REDIRECTS) throw await this.refused(appId, url, `more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(location, url);
        // Credentials meant for one origin are not carried to another, as browsers do: a
        // declared API redirecting elsewhere would otherwise receive the app's secrets.
        if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
        url = next;
        // 303 (and 301/302 after a POST, as browsers do) turns into a GET without a body.
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
          method = "GET";
          payload = null;
          for (const name of BODY_HEADERS) headers.delete(name);
        }
        continue;
      }
      return seal(response, url, (reason) => this.refused(appId, url, reason, "EgressTooLarge"));
    }
  }

  target(url) {
    const overrides = this.env.EGRESS_OVERRIDES ?? {};
    const binding = overrides[url.host];
    return binding ? this.env[binding] : this.env.INTERNET;
  }

  // Tells the control plane (a capability_error diag entry naming the origin, never the path or
  // query) and returns the error app code sees.
  async refused(appId, url, reason, name = "EgressRefused") {
    try {
      await this.env.INTERNAL.fetch("http://internal/egress/refused", {
        method: "POST",
        headers: { "content-type": "application/json", "x-by-egress-key": this.env.EGRESS_KEY },
        body: JSON.stringify({ appId, origin: url.origin, reason }),
      });
    } catch {
      // The refusal stands whether or not it could be recorded.
    }
    // The kind leads the message: an error's name does not survive the trip back to app code.
    return new TypeError(`${name}: outbound fetch to ${url.origin} refused: ${reason}`);
  }
}

function refuse(url, origins) {
  if (url.protocol !== "https:") return `only https is allowed (got ${url.protocol.slice(0, -1)})`;
  if (!origins.includes(url.origin)) return `${url.origin} is not declared in manifest.capabilities.origins`;
  const kind = addressKind(url.hostname);
  return kind ? `${url.hostname} is not a public address (${kind})` : null;
}

async function seal(response, url, tooLarge) {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_RESPONSE_BYTES) throw await tooLarge(`the response is ${declared} bytes; the cap is ${MAX_RESPONSE_BYTES}`);
  const chunks = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_RESPONSE_BYTES) {
        await reader.cancel();
        throw await tooLarge(`the response is over the ${MAX_RESPONSE_BYTES}-byte cap`);
      }
      chunks.push(value);
    }
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  const headers = new Headers(response.headers);
  headers.delete("content-encoding");
  headers.set("content-length", String(size));
  return new Response(response.status === 204 || response.status === 304 ? null : bytes, { status: response.status, statusText: response.statusText, headers });
}

// The kind of a non-public IP literal or local name, or null. URL parsing has already turned
// every IPv4 spelling (0x7f.1, 127.1, 2130706433, 0177.0.0.1) into dotted decimal.
function addressKind(hostname) {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return "loopback";
  if (hostname.startsWith("[")) return ipv6Kind(hostname.slice(1, -1));
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(hostname);
  return v4 ? ipv4Kind(v4.slice(1).map(Number)) : null;
}

function ipv4Kind([a, b, c]) {
  if (a === 0) return "unspecified";
  if (a === 127) return "loopback";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return "private";
  if (a === 100 && b >= 64 && b <= 127) return "carrier-grade NAT";
  if (a === 169 && b === 254) return "link-local (cloud metadata)";
  if (a === 192 && b === 0 && c === 0) return "special-purpose";
  if (a === 198 && (b === 18 || b === 19)) return "benchmarking";
  if (a >= 224 && a <= 239) return "multicast";
  if (a >= 240) return "reserved";
  return null;
}

function ipv6Kind(text) {
  const words = expandIpv6(text);
  if (!words) return "malformed";
  if (words.every((w) => w === 0)) return "unspecified";
  if (words.slice(0, 7).every((w) => w === 0) && words[7] === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible) carry an IPv4 address.
  if (words.slice(0, 5).every((w) => w === 0) && (words[5] === 0xffff || words[5] === 0)) {
    return ipv4Kind([words[6] >> 8, words[6] & 255, words[7] >> 8]) ?? "IPv4-mapped";
  }
  if (words[0] === 0x64 && words[1] === 0xff9b) return "NAT64";
  if (words[0] === 0x2002) return "6to4";
  if ((words[0] & 0xfe00) === 0xfc00) return "unique-local";
  if ((words[0] & 0xffc0) === 0xfe80) return "link-local";
  if ((words[0] & 0xff00) === 0xff00) return "multicast";
  return null;
}

function expandIpv6(text) {
  let head = text;
  const tail4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail4) {
    const [a, b, c, d] = tail4.slice(1).map(Number);
    head = text.slice(0, tail4.index) + ((a << 8) | b).toString(16) + ":" + ((c << 8) | d).toString(16);
  }
  const [left, right, extra] = head.split("::");
  if (extra !== undefined) return null;
  const parse = (part) => (part ? part.split(":").map((w) => parseInt(w, 16)) : []);
  const l = parse(left);
  const r = parse(right);
  const fill = right === undefined ? 0 : 8 - l.length - r.length;
  const words = [...l, ...new Array(Math.max(fill, 0)).fill(0), ...r];
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
}
