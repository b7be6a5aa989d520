import type { FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import type { AuditContext } from "../../domain/operators/index.ts";
import { clientIp, principalOf } from "../../http/auth.ts";

export interface Viewer {
  userId: string;
  handle: string;
}

/** The signed-in person looking at a page, or null: pages offer sign-in instead of a 401. */
export async function viewerOf(ctx: Services, request: FastifyRequest): Promise<Viewer | null> {
  const principal = await principalOf(ctx, request);
  if (principal?.kind !== "user") return null;
  const user = await ctx.users.byId(principal.userId);
  return user === null ? null : { userId: user.id, handle: user.handle };
}

/** The signed-in person as the audit log records them (DECISIONS §15). */
export function viewerAudit(request: FastifyRequest, viewer: Viewer): AuditContext {
  return { actor: { kind: "user", id: viewer.userId, handle: viewer.handle }, ip: clientIp(request) };
}
