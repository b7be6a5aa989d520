import { Type, type TSchema } from "typebox";

/** `{ok: false, error: {...}}`: shared by every route's 4xx/5xx responses and the OpenAPI. */
export const ErrorEnvelope = Type.Object(
  {
    ok: Type.Literal(false),
    error: Type.Object(
      {
        kind: Type.String({ description: "Branch on this: one of the spec's error kinds" }),
        message: Type.Optional(Type.String()),
        reason: Type.Optional(Type.String({ enum: ["token_malformed", "token_unknown", "token_revoked", "token_revoked_post_claim"] })),
        recovery: Type.Optional(Type.Object({ kind: Type.String() }, { additionalProperties: true })),
        plan: Type.Optional(Type.String({ enum: ["free", "pro", "business", "enterprise"] })),
        limit: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
        max: Type.Optional(Type.Integer({ minimum: 0 })),
        rung: Type.Optional(Type.String({ enum: ["throttled", "parked", "closed"] })),
        feature: Type.Optional(Type.String({ enum: ["custom_domain", "watermark_removal", "teams"] })),
        upgradeUrl: Type.Optional(Type.String({ format: "uri" })),
      },
      { additionalProperties: true },
    ),
  },
  { $id: "ErrorEnvelope", additionalProperties: false },
);

export const errorResponses = {
  "4xx": Type.Ref("ErrorEnvelope"),
  "5xx": Type.Ref("ErrorEnvelope"),
};

export const OkOnly = Type.Object({ ok: Type.Literal(true) });

/** Convenience for `{ok: true, ...fields}` response bodies. */
export function ok<T extends Record<string, TSchema>>(fields: T) {
  return Type.Object({ ok: Type.Literal(true), ...fields });
}

/** Security requirement objects, matching the schemes in the OpenAPI document. */
type SecurityRequirement = Record<string, string[]>[];

export const security: Record<"user" | "userTokenOnly" | "sessionOnly" | "none", SecurityRequirement> = {
  user: [{ userToken: [] }, { session: [] }],
  userTokenOnly: [{ userToken: [] }],
  sessionOnly: [{ session: [] }],
  none: [],
};

export const Timestamp = Type.String({ format: "date-time" });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
