/** A copy made under an idempotency key: a replay within 24 hours answers with the same app. */
export interface CopyRequestsTable {
  user_id: string;
  source_app_id: string;
  idempotency_key: string;
  /** sha256 of the request's other fields: the same key with another body is a conflict. */
  body_hash: string;
  app_id: string;
  created_at: number;
}
