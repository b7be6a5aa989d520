import { Type } from "typebox";
import { NullableTimestamp, Timestamp } from "../../http/schemas.ts";

export const WebhookId = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** Spec: Webhook. `secret` only in the create response and after a rotation. */
export const WebhookSchema = Type.Object({
  id: Type.String({ description: "webhook_<uuid>" }),
  app_id: Type.String({ format: "uuid" }),
  op: Type.String(),
  name: Type.String(),
  url: Type.String({ format: "uri", description: "the delivery URL" }),
  secret_prefix: Type.String(),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.String({ enum: ["owner"] }), Type.Null()]),
  last_run_at: NullableTimestamp,
  last_outcome: Type.Union([Type.String({ enum: ["success", "failure", "deferred"] }), Type.Null()]),
  last_error: Type.Union([Type.Object({ kind: Type.String(), message: Type.String() }), Type.Null()]),
  consecutive_failures: Type.Integer({ minimum: 0 }),
  created_at: Timestamp,
  target: Type.Object({ op: Type.String(), input_schema: Type.Unknown(), output_schema: Type.Unknown() }),
  secret: Type.Optional(Type.String({ description: "svc_hook_… secret, shown once" })),
});

export const WebhookLimits = Type.Object({
  plan: Type.String({ enum: ["free", "pro", "business", "enterprise"] }),
  webhooks_per_app: Type.Integer(),
  webhooks_per_owner: Type.Integer(),
  used: Type.Integer({ minimum: 0 }),
});

/** DECISIONS §8: one recorded request to a delivery URL. */
export const DeliverySchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  ts: Timestamp,
  status: Type.Integer(),
  outcome: Type.String({ enum: ["success", "failure", "deferred"] }),
  refusal: Type.Optional(Type.String({ description: "the error kind of a refused or failed delivery" })),
  requestBytes: Type.Integer({ minimum: 0 }),
  requestBody: Type.Union([Type.String(), Type.Null()]),
  requestTruncated: Type.Boolean(),
  responseBytes: Type.Integer({ minimum: 0 }),
  responseBody: Type.Union([Type.String(), Type.Null()]),
  responseTruncated: Type.Boolean(),
  durationMs: Type.Integer({ minimum: 0 }),
});
