import { Type } from "typebox";

export const ShareRoleSchema = Type.Union([Type.Literal("collaborator"), Type.Literal("end-user"), Type.Literal("viewer")]);

export const ShareParams = Type.Object({ appId: Type.String({ maxLength: 100 }), shareId: Type.String({ maxLength: 100 }) });

/** One row of the owner's list (DECISIONS §9). */
export const ShareSchema = Type.Object({
  shareId: Type.String(),
  grantee: Type.String({ description: "handle of the account, or the email invited" }),
  role: ShareRoleSchema,
  status: Type.Union([Type.Literal("pending"), Type.Literal("invited"), Type.Literal("accepted"), Type.Literal("expired")]),
  createdAt: Type.String({ format: "date-time" }),
  expiresAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
});

export const IncomingShareSchema = Type.Object({
  shareId: Type.String(),
  appId: Type.String(),
  role: ShareRoleSchema,
  invitedBy: Type.String({ description: "the owner's handle" }),
  createdAt: Type.String({ format: "date-time" }),
  expiresAt: Type.String({ format: "date-time" }),
});
