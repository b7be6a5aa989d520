import type { FastifyRequest } from "fastify";
import type { User } from "../../domain/accounts/users.ts";
import type { AuditContext } from "../../domain/operators/index.ts";
import { apiError } from "../../errors/index.ts";
import { clientIp, principalOf, type AuthDeps } from "../../http/auth.ts";
import type { Services } from "../../services.ts";

export interface Operator {
  user: User;
  /** The operator as their actions are audited: handle and address. */
  audit: AuditContext;
}

/**
 * The operator asking, by user token or session; anyone else, and any credential that does not
 * hold up, gets 404 `not_found` (DECISIONS §15): /admin does not exist for them.
 */
export async function operatorOf(ctx: AuthDeps & Pick<Services, "users">, request: FastifyRequest): Promise<Operator> {
  const principal = await principalOf(ctx, request).catch(() => null);
  const user = principal?.kind === "user" ? await ctx.users.byId(principal.userId) : null;
  if (user === null || user.role !== "operator" || user.suspension !== null) throw apiError("not_found", "not found");
  return { user, audit: { actor: { kind: "user", id: user.id, handle: user.handle }, ip: clientIp(request) } };
}

const operators = new WeakMap<FastifyRequest, Operator>();

/** Gates every route of a scope: registered as its preValidation hook, so a refusal comes before any check of the request. */
export function gateOperators(ctx: Parameters<typeof operatorOf>[0]) {
  return async (request: FastifyRequest): Promise<void> => {
    operators.set(request, await operatorOf(ctx, request));
  };
}

/** The operator the scope's gate let through. */
export function operator(request: FastifyRequest): Operator {
  const found = operators.get(request);
  if (found === undefined) throw new Error("an admin route ran without its operator gate");
  return found;
}
