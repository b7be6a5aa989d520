import { AsyncLocalStorage } from "node:async_hooks";
import { createECDH, createHmac } from "node:crypto";
import type { Kysely } from "kysely";
import type { Configuration, KoaContextWithOIDC } from "oidc-provider";
import type Provider from "oidc-provider";
import { DAY, HOUR } from "../../config/clock.ts";
import { PublicFetchError, publicFetch, type PublicFetchOptions } from "../../lib/public-fetch.ts";
import type { Database } from "../../store/index.ts";
import { OauthRecords } from "./records.ts";

/** Where the library serves its endpoints; any other path under /oauth/ is not one of them. */
export const OAUTH_ROUTES = {
  authorization: "/oauth/authorize",
  token: "/oauth/token",
  registration: "/oauth/register",
  revocation: "/oauth/revoke",
  jwks: "/oauth/jwks",
  end_session: "/oauth/session/end",
  introspection: "/oauth/introspect",
  userinfo: "/oauth/userinfo",
} as const;

/** DECISIONS §17: an access token lives an hour, a refresh token 30 days, a code 60 s. */
export const ACCESS_TOKEN_TTL_S = HOUR / 1000;
export const REFRESH_TOKEN_TTL_S = (30 * DAY) / 1000;
export const CODE_TTL_S = 60;
/** The one scope there is: acting as the person on /mcp (and their apps' /app/{id}/mcp). */
export const MCP_SCOPE = "mcp";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

// A client ID metadata document is small JSON; a server that sends more, or slowly, is refused.
const METADATA_FETCH: Omit<PublicFetchOptions, "testOverrides"> = { timeoutMs: 5_000, maxBytes: 64 * 1024 };

export interface OauthProviderDeps {
  db: Kysely<Database>;
  /** The service's origin, read when the provider is first made (tests learn their port late). */
  baseUrl: string;
  /** 32 bytes of the instance's secrets key: every instance derives the same cookie and signing keys. */
  secretsKey: Buffer;
  fetchOverrides?: PublicFetchOptions["testOverrides"];
}

/** The MCP resources a token may be bound to: `/mcp`, and one app's `/app/{id}/mcp`. */
export function isMcpResource(baseUrl: string, resource: string): boolean {
  if (resource === `${baseUrl}/mcp`) return true;
  if (!resource.startsWith(`${baseUrl}/app/`)) return false;
  return /^[A-Za-z0-9_-]{1,100}\/mcp$/.test(resource.slice(`${baseUrl}/app/`.length));
}

/**
 * Whether the request being served may make the server fetch one more client ID metadata
 * document: set by the protocol routes around each request, from its network's allowance. The
 * library fetches a document wherever a client id is a URL (authorize, token, revoke…), so what
 * is metered is the fetch itself. No allowance set (the consent routes): allowed.
 */
export const metadataFetchAllowance = new AsyncLocalStorage<() => boolean>();

/** Failed document URLs are not fetched again for a while: a slow one costs its time once, not per request. */
const FAILED_KEEP_MS = 60_000;
const FAILED_MAX = 1_000;

/**
 * How the library fetches client ID metadata documents: under app egress's rules (public
 * addresses, https, caps), with a URL that just failed refused at once. The library may look a
 * client up more than once in one request; a slow or refused URL costs its time once.
 */
function metadataFetcher(overrides: PublicFetchOptions["testOverrides"]): (url: string | URL) => Promise<Response> {
  const failed = new Map<string, number>();
  return async (url) => {
    const key = String(url);
    const until = failed.get(key);
    if (until !== undefined && until > Date.now()) throw new PublicFetchError("this document could not be fetched a moment ago");
    if (metadataFetchAllowance.getStore()?.() === false) throw new PublicFetchError("this network has made the server fetch too many client metadata documents; try again later");
    try {
      return await publicFetch(key, { ...METADATA_FETCH, ...(overrides === undefined ? {} : { testOverrides: overrides }) });
    } catch (error) {
      failed.delete(key);
      failed.set(key, Date.now() + FAILED_KEEP_MS);
      if (failed.size > FAILED_MAX) failed.delete(failed.keys().next().value as string);
      throw error;
    }
  };
}

function derive(secretsKey: Buffer, label: string): Buffer {
  return createHmac("sha256", secretsKey).update(`brickyard oauth ${label}`).digest();
}

/**
 * A P-256 signing key derived from the secrets key, the same on every instance. Access tokens are
 * opaque (rows in the store) and no ID token is issued without `openid`, but the library signs
 * what it signs with this rather than a throwaway key of its own per process.
 */
function signingKey(secretsKey: Buffer): Record<string, string> {
  const d = derive(secretsKey, "signing key");
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey();
  return { kty: "EC", crv: "P-256", d: d.toString("base64url"), x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url"), use: "sig", alg: "ES256", kid: "brickyard-1" };
}

/**
 * The authorization server (DECISIONS §17) is oidc-provider: OpenID-certified, it carries the
 * parts that are easy to get subtly wrong (PKCE, dynamic registration, resource indicators,
 * refresh rotation with reuse detection, code replay revoking the grant, client ID metadata
 * documents) and has kept up with the drafts MCP relies on. Our side stays ours: accounts and
 * sessions (the consent page, routes/oauth/consent.ts), storage (records.ts), the egress rules for
 * metadata documents (lib/public-fetch.ts), and what a token may do (auth at /mcp).
 */
export async function createOauthProvider(deps: OauthProviderDeps): Promise<Provider> {
  const { default: ProviderClass, errors } = await import("oidc-provider");
  const base = deps.baseUrl;
  const configuration: Configuration = {
    adapter: OauthRecords.adapterFor(deps.db),
    clients: [],
    clientDefaults: { grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none", id_token_signed_response_alg: "ES256" },
    // Public clients only: an MCP client on someone's laptop keeps no secret.
    clientAuthMethods: ["none"],
    responseTypes: ["code"],
    // DECISIONS §17: redirect URIs are https or loopback http. The library lets a "web" client
    // register http anywhere; an authorization code sent in the clear to any host is refused here.
    // Private-use schemes (cursor://, vscode://) stay allowed, as RFC 8252 §7.1 says for apps.
    extraClientMetadata: {
      properties: ["brickyard_redirect_check"],
      validator: (_ctx, key, _value, metadata) => {
        if (key !== "brickyard_redirect_check") return;
        for (const uri of (metadata.redirect_uris as string[] | undefined) ?? []) {
          const url = URL.parse(uri);
          if (url?.protocol === "http:" && !LOOPBACK_HOSTS.has(url.hostname)) throw new errors.InvalidClientMetadata("redirect_uris must be https, or http on a loopback address");
        }
      },
    },
    pkce: { required: () => true },
    // `mcp` is also each MCP resource's scope (getResourceServerInfo): a client registers with it
    // and asks for it, and the consent page grants it both ways.
    scopes: ["openid", "offline_access", MCP_SCOPE],
    claims: { openid: ["sub"] },
    cookies: { keys: [derive(deps.secretsKey, "cookie key").toString("base64url")] },
    jwks: { keys: [signingKey(deps.secretsKey)] },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: CODE_TTL_S,
      RefreshToken: REFRESH_TOKEN_TTL_S,
      Grant: REFRESH_TOKEN_TTL_S,
      Interaction: 600,
      Session: DAY / 1000,
    },
    rotateRefreshToken: true,
    // MCP clients seldom ask for offline_access; every grant that may refresh gets a refresh token.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    // The library ties tokens without offline_access to its browser session (a day here): an
    // agent's refresh token would die with a cookie it never sees. Ours live their 30 days,
    // until revoked in /account.
    expiresWithSession: () => false,
    // Every authorization comes through the consent page: no grant is reused silently.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return typeof grantId === "string" ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/oauth/consent/${interaction.uid}` },
    routes: OAUTH_ROUTES,
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      // Registration management is off: a registration access token would be a row for nothing.
      registration: { enabled: true, issueRegistrationAccessToken: false },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => `${base}/mcp`,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (!isMcpResource(base, resource)) throw new errors.InvalidTarget(`${resource} is not a resource of this server`);
          return { scope: MCP_SCOPE, audience: resource, accessTokenTTL: ACCESS_TOKEN_TTL_S, accessTokenFormat: "opaque" };
        },
      },
      clientIdMetadataDocument: { enabled: true, ack: "draft-02" },
      // On by default, and no MCP client uses it: each push was a stored row of its parameters
      // (~67 KB for a 50 KB `state`), outside the allowance authorizations have.
      pushedAuthorizationRequests: { enabled: false },
    },
    // What the library fetches (client ID metadata documents) goes out under app code's egress rules.
    fetch: metadataFetcher(deps.fetchOverrides),
    renderError: (ctx, out) => {
      ctx.type = "application/json";
      ctx.body = out;
    },
  } as Configuration;
  const provider = new ProviderClass(base, configuration);
  // routes/oauth/protocol.ts sets Host and X-Forwarded-Proto from BASE_URL on every request.
  provider.proxy = true;
  return provider;
}
