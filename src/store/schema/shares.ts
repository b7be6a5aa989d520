/**
 * An app shared with one person: an invitation until accepted (`pending` for an account,
 * `invited` for an email with no account yet), then a grant (`accepted`).
 */
export interface AppSharesTable {
  /** Opaque id the owner revokes by. */
  id: string;
  app_id: string;
  grantee_user_id: string | null;
  /** Set only for an invitation to an email with no account (lower-cased). */
  grantee_email: string | null;
  role: "collaborator" | "end-user" | "viewer";
  status: "pending" | "invited" | "accepted";
  invited_by: string;
  created_at: number;
  /** An invitation not accepted by then is `expired` (14 days); grants keep it but never expire. */
  expires_at: number;
  accepted_at: number | null;
  /** The share link whose opening made this grant; revoking the link removes it. */
  link_id: string | null;
}

/** A revocable link that grants its role to any signed-in person who opens it. */
export interface AppShareLinksTable {
  id: string;
  app_id: string;
  role: "end-user" | "viewer";
  /** sha256 of the `svc_share_…` token; the URL is shown once, when the link is made. */
  token_hash: string;
  created_by: string;
  created_at: number;
}

/** One share invitation sent, kept a day: what the inviter's daily cap counts (a revoke leaves it). */
export interface ShareInvitationsSentTable {
  inviter_user_id: string;
  created_at: number;
}
