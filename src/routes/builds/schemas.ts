import { Type } from "typebox";
import { NullableTimestamp, Timestamp } from "../../http/schemas.ts";


/** The spec's build status (202 from a write whose npm imports must be built first). */
export const BuildStatusResponse = Type.Object({
  ok: Type.Literal(true),
  buildId: Type.String({ format: "uuid" }),
  intent: Type.Union([Type.Literal("create"), Type.Literal("update"), Type.Literal("migrate"), Type.Literal("restore"), Type.Literal("copy")]),
  state: Type.Union([
    Type.Literal("queued"),
    Type.Literal("resolving"),
    Type.Literal("building"),
    Type.Literal("validating"),
    Type.Literal("published"),
    Type.Literal("failed"),
    Type.Literal("superseded"),
    Type.Literal("canceled"),
    Type.Literal("expired"),
  ]),
  sourceEtag: Type.String(),
  statusUrl: Type.String({ format: "uri" }),
  attempts: Type.Integer({ minimum: 0 }),
  acceptedAt: Timestamp,
  updatedAt: Timestamp,
  finishedAt: NullableTimestamp,
  elapsedMs: Type.Integer({ minimum: 0 }),
  lockState: Type.Union([Type.Literal("locked"), Type.Literal("unresolved")]),
  queueDeadline: Timestamp,
  deadline: Timestamp,
  inspectionExpiresAt: Timestamp,
  idempotencyExpiresAt: NullableTimestamp,
  retryAfterSeconds: Type.Optional(Type.Integer({ minimum: 0 })),
  appId: Type.Optional(Type.String({ format: "uuid" })),
  revision: Type.Optional(Type.Integer({ minimum: 1 })),
  activeRevision: Type.Optional(Type.Integer({ minimum: 1 })),
  url: Type.Optional(Type.String({ format: "uri" })),
  inputDigest: Type.Optional(Type.String()),
  lockDigest: Type.Optional(Type.String()),
  resolvedDependencies: Type.Optional(
    Type.Object({ server: Type.Record(Type.String(), Type.String()), client: Type.Record(Type.String(), Type.String()) }, { description: "exact versions by package name" }),
  ),
  error: Type.Optional(
    Type.Object({
      kind: Type.String(),
      message: Type.String(),
      retryable: Type.Boolean(),
      details: Type.Optional(Type.Object({ specifier: Type.Optional(Type.String()), line: Type.Optional(Type.Integer()), column: Type.Optional(Type.Integer()) })),
    }),
  ),
  token: Type.Optional(Type.String({ description: "anonymous creates only, in the 202 answer: the per-app token, shown this once" })),
});

/** `Prefer: wait=N` (RFC 7240): hold the answer up to N seconds for the build to finish. */
export const PreferHeader = Type.Object({
  prefer: Type.Optional(Type.String({ description: "wait=N: answer when the build reaches a terminal state, or after N seconds (at most 60)" })),
});

/** `Prefer: wait=N` and `Idempotency-Key` (DECISIONS §10), on POST /app and PUT /app/{id}. */
export const IdempotencyHeaders = Type.Object({
  ...PreferHeader.properties,
  "idempotency-key": Type.Optional(
    Type.String({ maxLength: 200, description: "the same key with the same body answers with the first result for 24 hours; with another body, 409 idempotency_conflict" }),
  ),
});
