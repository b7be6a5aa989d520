import { Resolver } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { Agent, fetch as undiciFetch } from "undici";

/**
 * A GET to a public https URL from the control plane, under the rules app code's egress keeps:
 * https only, no credentials in the URL, every address the name resolves to a public unicast one
 * (the connection goes to the address that was checked, so a second answer cannot move it onto
 * loopback), no redirects, a time cap and a size cap. Used for OAuth client ID metadata
 * documents (DECISIONS §17), whose URL anyone may send.
 */
export interface PublicFetchOptions {
  /** Whole request, connect to last byte. */
  timeoutMs: number;
  maxBytes: number;
  /**
   * Tests only, from code (never the environment or a request): `host:port` → loopback
   * `address:port` and the CA that signed the fixture, as the executor's egress overrides.
   */
  testOverrides?: { hosts: Record<string, string>; caPem: string };
}

export class PublicFetchError extends Error {}

/** True for an address anyone on the internet could also reach: not loopback, private, link-local, reserved, … */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "unicast";
}

/**
 * What `host` resolves to, refused unless every address is public. Through c-ares (dns.Resolver),
 * not getaddrinfo: a lookup that never answers must not hold one of libuv's four threads, which
 * sign-ins (argon2), file reads and crypto share, and it counts inside the request's time cap.
 */
async function publicAddress(host: string, signal: AbortSignal): Promise<{ address: string; family: number }> {
  if (ipaddr.isValid(host.replace(/^\[|\]$/g, ""))) throw new PublicFetchError("an address literal is not accepted; use a name");
  const resolver = new Resolver({ timeout: 2_000, tries: 1 });
  const cancel = () => resolver.cancel();
  signal.addEventListener("abort", cancel, { once: true });
  try {
    const [v4, v6] = await Promise.all([resolver.resolve4(host).catch(() => [] as string[]), resolver.resolve6(host).catch(() => [] as string[])]);
    const addresses = [...v4.map((address) => ({ address, family: 4 })), ...v6.map((address) => ({ address, family: 6 }))];
    const first = addresses[0];
    if (first === undefined) throw new PublicFetchError(signal.aborted ? `${host} did not resolve in time` : `${host} does not resolve`);
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    if (refused !== undefined) throw new PublicFetchError(`${host} resolves to ${refused.address}, which is not a public address`);
    return first;
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}

/** The response, with its body read whole within the caps; throws PublicFetchError for every refusal. */
export async function publicFetch(raw: string, options: PublicFetchOptions, init: { headers?: Record<string, string> } = {}): Promise<Response> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PublicFetchError("not a URL");
  }
  if (url.protocol !== "https:") throw new PublicFetchError("only https URLs are fetched");
  if (url.username !== "" || url.password !== "") throw new PublicFetchError("a URL with credentials is not fetched");
  const override = options.testOverrides?.hosts[url.host];
  // One cap from the first look-up to the last byte.
  const signal = AbortSignal.timeout(options.timeoutMs);
  const target = override === undefined ? await publicAddress(url.hostname, signal) : null;
  const agent = new Agent({
    connect: {
      ...(override === undefined ? {} : { ca: options.testOverrides?.caPem }),
      // The name stays in the URL (SNI, certificate check, Host); the socket goes where we checked.
      lookup: (_host, _opts, callback) => {
        if (override !== undefined) {
          const [address = ""] = override.split(/:(?=\d+$)/);
          callback(null, [{ address, family: address.includes(":") ? 6 : 4 }] as never);
          return;
        }
        if (target === null) throw new Error("unreachable: no checked address");
        callback(null, [{ address: target.address, family: target.family }] as never);
      },
    },
    connectTimeout: options.timeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
  try {
    const response = await undiciFetch(url, { method: "GET", redirect: "manual", signal, dispatcher: agent, ...(init.headers === undefined ? {} : { headers: init.headers }) });
    if (response.status >= 300 && response.status < 400) throw new PublicFetchError(`redirects are not followed (${response.status})`);
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > options.maxBytes) throw new PublicFetchError(`the body is over ${options.maxBytes} bytes`);
    const chunks: Uint8Array[] = [];
    let received = 0;
    for await (const chunk of response.body ?? []) {
      received += (chunk as Uint8Array).byteLength;
      if (received > options.maxBytes) throw new PublicFetchError(`the body is over ${options.maxBytes} bytes`);
      chunks.push(chunk as Uint8Array);
    }
    return new Response(Buffer.concat(chunks), { status: response.status, headers: response.headers as unknown as Headers });
  } catch (error) {
    if (error instanceof PublicFetchError) throw error;
    throw new PublicFetchError(signal.aborted ? `no answer within ${options.timeoutMs} ms` : `fetch failed: ${(error as Error).message}`);
  } finally {
    void agent.close().catch(() => undefined);
  }
}
