import { ERROR_STATUS, type ErrorKind } from "./kinds.ts";
import type { Recovery } from "./recovery.ts";

export type Plan = "free" | "pro" | "business" | "enterprise";
export type TokenReason = "token_malformed" | "token_unknown" | "token_revoked" | "token_revoked_post_claim";

/** Optional envelope fields beside `kind` and `message` (spec: Errors → Envelope). */
export interface ErrorFields {
  reason?: TokenReason;
  recovery?: Recovery;
  /** Present on every plan refusal; its presence marks one. */
  plan?: Plan;
  limit?: string | number;
  max?: number;
  observed?: number;
  allowed?: number;
  rung?: "throttled" | "parked" | "closed";
  feature?: "custom_domain" | "watermark_removal" | "teams";
  upgradeUrl?: string;
  existingAppId?: string;
  details?: Record<string, unknown>;
}

export interface ErrorOptions {
  /** Overrides the kind's registry status; only for kinds the decisions give two statuses. */
  status?: number;
  /** Response headers that belong to this refusal (ETag on 412, Retry-After on 429, …). */
  headers?: Record<string, string>;
  /** Close the connection after answering (the `closed` rate-limit rung). */
  closeConnection?: boolean;
}

/** The one error type domain code throws; the HTTP layer renders it as the spec's envelope. */
export class ApiError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly fields: ErrorFields;
  readonly headers: Record<string, string>;
  readonly closeConnection: boolean;

  constructor(kind: ErrorKind, message: string, fields: ErrorFields = {}, options: ErrorOptions = {}) {
    super(message);
    this.name = "ApiError";
    this.kind = kind;
    this.status = options.status ?? ERROR_STATUS[kind];
    this.fields = fields;
    this.headers = options.headers ?? {};
    this.closeConnection = options.closeConnection ?? false;
  }

  toEnvelope(): ErrorEnvelope {
    return { ok: false, error: { kind: this.kind, message: this.message, ...this.fields } };
  }
}

export interface ErrorEnvelope {
  ok: false;
  error: { kind: ErrorKind; message: string } & ErrorFields;
}

export function apiError(kind: ErrorKind, message: string, fields?: ErrorFields, options?: ErrorOptions): ApiError {
  return new ApiError(kind, message, fields, options);
}
