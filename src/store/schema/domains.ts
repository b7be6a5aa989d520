/** An app's custom hostname (DECISIONS §12, migration 028). */
export interface AppDomainsTable {
  id: string;
  app_id: string;
  /** Lower-cased ASCII (IDNA) form, no trailing dot. */
  hostname: string;
  /** `pending` until its TXT record is found, then `verified`; `failing` while it has gone missing. */
  state: "pending" | "verified" | "failing";
  /** The TXT value that proves the hostname: `svc-verify=<token>`. */
  token: string;
  created_at: number;
  verified_at: number | null;
  /** The last look-up of its record, by hand or by the re-check. */
  checked_at: number | null;
  /** When the record was first found missing after it had been verified. */
  missing_since: number | null;
}
