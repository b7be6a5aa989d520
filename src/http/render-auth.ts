import type { FastifyRequest } from "fastify";
import { apiError } from "../errors/index.ts";
import { principalAgain, principalOf, type AuthDeps, type Principal } from "./auth.ts";

/**
 * The principal of a request that may carry a render token in the query (`?t=`; spec: query
 * render token) because the browser sends it where headers cannot be set: the frame's URL, an
 * EventSource, an image, a CSP report. A header still wins; `t` must be a render token. `again`:
 * resolved afresh, as a stream re-checks its access (principalAgain).
 */
export async function principalWithQueryToken(ctx: AuthDeps, request: FastifyRequest, options: { again?: boolean } = {}): Promise<Principal | null> {
  const t = (request.query as Record<string, unknown> | undefined)?.t;
  if (request.headers.authorization !== undefined || typeof t !== "string" || t === "") return options.again === true ? principalAgain(ctx, request) : principalOf(ctx, request);
  const principal = await ctx.tokens.authenticate(t);
  if (principal.kind !== "render") throw apiError("unauthorized", "the t query parameter carries only render tokens (svc_render_…)", { reason: "token_malformed" });
  return principal;
}
