/** Reports anyone may send about an app (DECISIONS §15), newest first in /admin. */
export interface AbuseReportsTable {
  id: string;
  app_id: string;
  /** One of ABUSE_REASONS (domain/operators/reports.ts). */
  reason: string;
  /** At most 2 KB, as sent. */
  details: string;
  reporter_ip: string;
  created_at: number;
}

/**
 * Who did what (DECISIONS §15), written in the transaction of the action it records, so an action
 * that rolls back leaves no row and one that commits always has its row. Never a secret or a
 * token's value: targets are ids, details are what an operator needs to read the row.
 */
export interface AuditLogTable {
  id: string;
  at: number;
  /** `user` (a person, operators included), `app` (an app token), `cli`, `system`. */
  actor_kind: string;
  actor_id: string | null;
  /** The actor's handle when it was written, so the row reads the same after a rename or deletion. */
  actor_handle: string | null;
  action: string;
  /** `app`, `user`, `token`, `share`, `report`. */
  target_kind: string;
  target_id: string;
  /** The client address, when the action came over HTTP. */
  ip: string | null;
  /** JSON object text. */
  detail: string;
}
