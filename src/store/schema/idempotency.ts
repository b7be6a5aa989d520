/** The first answer to an Idempotency-Key, replayed for 24 hours. */
export interface IdempotencyRecordsTable {
  scope: string;
  request_line: string;
  idempotency_key: string;
  body_hash: string;
  status: number | null;
  response: string | null;
  etag: string | null;
  created_at: number;
}
