import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { TeamInvitationView } from "../../domain/teams/invitations.ts";
import type { MemberView, TeamView } from "../../domain/teams/teams.ts";
import { Timestamp } from "../../http/schemas.ts";

export const TeamIdParams = Type.Object({ teamId: Type.String({ maxLength: 100 }) });
export const InvitationIdParams = Type.Object({ invitationId: Type.String({ maxLength: 100 }) });

const TeamRoleSchema = Type.Union([Type.Literal("owner"), Type.Literal("admin"), Type.Literal("member")]);
export const InvitedRoleSchema = Type.Union([Type.Literal("admin"), Type.Literal("member")]);
const PlanSchema = Type.Union([Type.Literal("free"), Type.Literal("pro"), Type.Literal("business"), Type.Literal("enterprise")]);

export const TeamSchema = Type.Object({
  id: Type.String(),
  slug: Type.String({ description: "the team's apps live at /@slug/{manifestId}" }),
  name: Type.String(),
  plan: PlanSchema,
  role: TeamRoleSchema,
  createdAt: Timestamp,
});

export const MemberSchema = Type.Object({ userId: Type.String(), handle: Type.String(), role: TeamRoleSchema, joinedAt: Timestamp });

export const InvitationSchema = Type.Object({
  id: Type.String(),
  teamId: Type.String(),
  email: Type.String(),
  role: InvitedRoleSchema,
  status: Type.Union([Type.Literal("pending"), Type.Literal("accepted"), Type.Literal("expired")]),
  createdAt: Timestamp,
  expiresAt: Timestamp,
});

export function teamJson(t: TeamView) {
  return { ...t, createdAt: iso(t.createdAt) };
}

export function memberJson(m: MemberView) {
  return { ...m, joinedAt: iso(m.joinedAt) };
}

export function invitationJson(i: TeamInvitationView) {
  return { id: i.id, teamId: i.teamId, email: i.email, role: i.role, status: i.status, createdAt: iso(i.createdAt), expiresAt: iso(i.expiresAt) };
}
