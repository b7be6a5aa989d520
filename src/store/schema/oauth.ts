/**
 * The OAuth authorization server's records (migration 027): one row per instance of one of
 * oidc-provider's models (Client, Interaction, AuthorizationCode, AccessToken, RefreshToken,
 * Grant, Session, …). `payload` is the library's JSON; the other columns are what we query by.
 */
export interface OauthRecordsTable {
  model: string;
  id: string;
  payload: string;
  grant_id: string | null;
  uid: string | null;
  /** The person a grant (and its tokens) act for. */
  account_id: string | null;
  client_id: string | null;
  /** Epoch ms after which the row is dead; null for records that do not expire (a registered client). */
  expires_at: number | null;
  /** When a one-use record (a code, a rotated refresh token) was used. */
  consumed_at: number | null;
  /** On a grant: when one of its access tokens last reached /mcp (minute precision); on a client: when it registered. */
  last_used_at: number | null;
  /** On a grant: the client's name as the consent page showed it, for /account. */
  label: string | null;
}
