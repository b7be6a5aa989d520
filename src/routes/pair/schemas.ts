import { Type } from "typebox";
import { LABEL_MAX_CHARS } from "../../domain/pairing/index.ts";
import { Timestamp } from "../../http/schemas.ts";

export const StartBody = Type.Object(
  { label: Type.Optional(Type.String({ maxLength: LABEL_MAX_CHARS, description: "shown to the person on the approval page" })) },
  { additionalProperties: false },
);

const grantFields = {
  device_code: Type.String({ description: "agent-private: never display or log it" }),
  user_code: Type.String({ pattern: "^SVC-[A-Z2-9]{6}$", description: "shown verbatim to the person" }),
  verification_url: Type.String({ format: "uri" }),
  polling_interval: Type.Integer({ description: "seconds between polls" }),
  expires_in: Type.Integer({ description: "seconds; each pending poll extends it, up to 60 minutes from start" }),
};

/** The spec's `pairing` object of an anonymous create with `pair: true` (`Pairings.startBound`). */
export const PairingObject = Type.Object(grantFields);

export const StartResponse = Type.Object({
  ok: Type.Literal(true),
  ...grantFields,
  verification_url_complete: Type.String({ format: "uri" }),
});

export const PollBody = Type.Object({ device_code: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false });

export const PollResponse = Type.Object({
  ok: Type.Literal(true),
  status: Type.String({ enum: ["pending", "approved", "slow_down", "denied", "expired", "consumed"] }),
  token: Type.Optional(Type.String({ description: "approved only: a 30-day user token, returned exactly once" })),
  expiresAt: Type.Optional(Timestamp),
  polling_interval: Type.Optional(Type.Integer({ description: "slow_down only: the new interval in seconds, for good" })),
});

export const ApproveBody = Type.Object(
  {
    user_code: Type.String({ minLength: 1, maxLength: 32, description: "compared case-insensitively, dashes and spaces ignored" }),
    decision: Type.Optional(Type.Union([Type.Literal("approve"), Type.Literal("deny")], { default: "approve" })),
  },
  { additionalProperties: false },
);

export const ApproveResponse = Type.Object({ ok: Type.Literal(true), status: Type.String({ enum: ["approved", "denied"] }) });
