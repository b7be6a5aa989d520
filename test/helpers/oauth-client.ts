import { createServer, type Server } from "node:http";
import type { OAuthClientProvider } from "@modelcontextprotocol/client";

type Provider = OAuthClientProvider;
type Tokens = Awaited<ReturnType<Provider["tokens"]>>;
type Info = Awaited<ReturnType<Provider["clientInformation"]>>;

/**
 * What an MCP client keeps for OAuth (the SDK asks a provider for it): its registration, its
 * tokens, the PKCE verifier, and where it sends the person to sign in. In memory, as a client
 * app would keep it on disk. `clientMetadataUrl` makes it a metadata-document client instead of
 * a dynamically registered one.
 */
export class MemoryOAuthClient implements Provider {
  info: Info;
  saved: Tokens;
  verifier = "";
  /** The authorization URL the SDK last sent the person to. */
  authorizationUrl: URL | null = null;
  readonly clientMetadataUrl?: string;

  constructor(
    readonly redirectUrl: string,
    options: { clientMetadataUrl?: string; name?: string } = {},
  ) {
    if (options.clientMetadataUrl !== undefined) this.clientMetadataUrl = options.clientMetadataUrl;
    this.name = options.name ?? "Test MCP client";
  }

  private readonly name: string;

  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [this.redirectUrl], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation(): Info {
    return this.info;
  }
  saveClientInformation(info: NonNullable<Info>): void {
    this.info = info;
  }
  tokens(): Tokens {
    return this.saved;
  }
  saveTokens(tokens: NonNullable<Tokens>): void {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
  discovery: Awaited<ReturnType<NonNullable<Provider["discoveryState"]>>>;
  saveDiscoveryState(state: NonNullable<typeof this.discovery>): void {
    this.discovery = state;
  }
  discoveryState(): typeof this.discovery {
    return this.discovery;
  }
}

/** A loopback redirect URI that records what the authorization server sends back to it. */
export async function startRedirectCatcher(): Promise<{ url: string; next(): Promise<URLSearchParams>; close(): Promise<void> }> {
  const waiting: ((query: URLSearchParams) => void)[] = [];
  const server: Server = createServer((req, res) => {
    const query = new URL(req.url ?? "/", "http://x").searchParams;
    res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>Done</title><h1>You can close this window</h1>");
    waiting.shift()?.(query);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("catcher did not bind");
  return {
    url: `http://127.0.0.1:${address.port}/callback`,
    next: () => new Promise((resolve) => waiting.push(resolve)),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** One authorization done by hand, as a client would, through the real endpoints (no browser). */
export interface ManualFlow {
  clientId: string;
  redirectUri: string;
  verifier: string;
  /** The session cookie of the person who consents. */
  session: string;
}

const form = (values: Record<string, string>) => ({ method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(values) });

/** Registers a public client by RFC 7591 and returns its id (or the refusal's status and body). */
export async function register(base: string, metadata: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(metadata) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Cookies a response sets, as a Cookie header's pairs. */
function cookiesOf(res: Response): string[] {
  return res.headers.getSetCookie().map((cookie) => cookie.split(";")[0] ?? "");
}

/**
 * GET /oauth/authorize with `query`, then the consent page approved by the person whose session
 * is given, following the redirects by hand; returns the final redirect (to the client, with a
 * code or an error) or the first answer that is not a redirect.
 */
export async function authorize(base: string, session: string, query: Record<string, string>, decision: "approve" | "deny" = "approve"): Promise<Response> {
  const start = await fetch(`${base}/oauth/authorize?${new URLSearchParams(query).toString()}`, { redirect: "manual" });
  const consentAt = start.headers.get("location");
  if (start.status !== 303 || consentAt === null || !consentAt.startsWith("/oauth/consent/")) return start;
  const cookies = [session, ...cookiesOf(start)];
  const page = await fetch(new URL(consentAt, base), { headers: { cookie: cookies.join("; ") }, redirect: "manual" });
  if (page.status !== 200) return page;
  const decided = await fetch(new URL(consentAt, base), { ...form({ decision }), headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies.join("; "), origin: base }, redirect: "manual" });
  const resumeAt = decided.headers.get("location");
  if (decided.status !== 303 || resumeAt === null) return decided;
  return fetch(new URL(resumeAt, base), { headers: { cookie: [...cookies, ...cookiesOf(decided)].join("; ") }, redirect: "manual" });
}

/** POST /oauth/token with `values`; the status and the JSON answer. */
export async function token(base: string, values: Record<string, string>): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${base}/oauth/token`, form(values));
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** tools/list at `url` with the bearer token: the status and the WWW-Authenticate. */
export async function mcpWith(url: string, bearer: string): Promise<{ status: number; challenge: string | null }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  await res.arrayBuffer();
  return { status: res.status, challenge: res.headers.get("www-authenticate") };
}
