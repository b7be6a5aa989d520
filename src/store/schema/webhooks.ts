import type { Generated } from "kysely";

/** Inbound delivery URLs for one declared op of an app (spec: Webhook). Removed with the app. */
export interface WebhooksTable {
  /** `webhook_<uuid>`. */
  id: string;
  app_id: string;
  op: string;
  name: string;
  /** SHA-256 (hex) of the `svc_hook_…` secret; the plaintext is never stored. */
  secret_hash: string;
  secret_prefix: string;
  /** 0 or 1. */
  enabled: number;
  disabled_reason: "owner" | null;
  last_run_at: number | null;
  last_outcome: "success" | "failure" | "deferred" | null;
  /** JSON `{kind, message}` of the last failed delivery. */
  last_error: string | null;
  consecutive_failures: number;
  created_at: number;
  updated_at: number;
}

/**
 * One row per request to a delivery URL (DECISIONS §8), accepted or refused. Keyed to the app,
 * not the webhook: records outlive a deleted webhook and age out, but go with the app.
 */
export interface WebhookDeliveriesTable {
  /** Insertion order, to sort records that share a timestamp. */
  seq: Generated<number>;
  id: string;
  webhook_id: string;
  app_id: string;
  ts: number;
  status: number;
  outcome: "success" | "failure" | "deferred";
  /** The error kind when the request was refused before the op ran or the op failed. */
  refusal: string | null;
  request_bytes: number;
  /** Capped by the owner's plan, secrets redacted; null once the 30-day body retention passes. */
  request_body: string | null;
  request_truncated: number;
  response_bytes: number;
  response_body: string | null;
  response_truncated: number;
  duration_ms: number;
}
