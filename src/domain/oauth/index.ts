import type { Kysely } from "kysely";
import type Provider from "oidc-provider";
import type { Database } from "../../store/index.ts";
import { createOauthProvider, type OauthProviderDeps } from "./provider.ts";
import type { OauthGrants } from "./grants.ts";

export { OauthGrants, type ConnectedClient } from "./grants.ts";
export { isMcpResource, MCP_SCOPE, ACCESS_TOKEN_TTL_S } from "./provider.ts";

/** Who an OAuth access token acts for, once it is found live and bound to the resource asked. */
export interface OauthHolder {
  userId: string;
  grantId: string;
  clientId: string;
}

/**
 * The authorization server and what the rest of Brickyard asks of it: the provider, made on first
 * use (its library is large, and a test server learns its own URL only after it starts), and the
 * check of an access token presented to an MCP endpoint.
 */
export class OauthServer {
  private made: Promise<Provider> | null = null;

  constructor(
    private readonly deps: Omit<OauthProviderDeps, "baseUrl"> & { baseUrl: () => string },
    readonly grants: OauthGrants,
  ) {}

  provider(): Promise<Provider> {
    this.made ??= createOauthProvider({ ...this.deps, baseUrl: this.deps.baseUrl() });
    return this.made;
  }

  /**
   * The holder of a live access token bound to `resource`; null for a token that is unknown,
   * expired, revoked (its grant gone) or bound to another resource.
   */
  async holder(token: string, resource: string): Promise<OauthHolder | null> {
    // Our tokens' shape never reaches here, and the library's are 43 base64url characters.
    if (!/^[A-Za-z0-9_-]{20,128}$/.test(token)) return null;
    const provider = await this.provider();
    const found = await provider.AccessToken.find(token);
    if (found === undefined || found.isExpired || found.accountId === undefined || found.grantId === undefined) return null;
    const audience = found.aud as unknown;
    const bound = audience === resource || (Array.isArray(audience) && audience.includes(resource));
    if (!bound) return null;
    // A token issued as its grant was being revoked must not outlive it.
    if ((await provider.Grant.find(found.grantId)) === undefined) return null;
    return { userId: found.accountId, grantId: found.grantId, clientId: found.clientId ?? "" };
  }
}

export function createOauthServer(db: Kysely<Database>, deps: Omit<OauthProviderDeps, "baseUrl" | "db"> & { baseUrl: () => string }, grants: OauthGrants): OauthServer {
  return new OauthServer({ ...deps, db }, grants);
}
