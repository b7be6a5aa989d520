import type { FastifyRequest } from "fastify";
import { SECOND } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import { sessionCookieName, type Principal } from "../../http/auth.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import type { StreamOptions } from "../../http/sse.ts";

/** How long a stream's reader, once found still allowed, stays so without another look. */
export const ACCESS_RECHECK_MS = SECOND;

/**
 * What an open stream checks as it goes (sse.ts `allowed`): a cookie stream's session at every
 * look (spec Events 2: its end is `sse_cookie_expired`); then the request's credential afresh, so
 * a token revoked since is refused, and `authorize` with it, so a share revoked, a membership
 * ended or the app made private ends the stream as it would refuse the stream asked for now.
 * That second check reads tokens and roles, so a yes stands for ACCESS_RECHECK_MS of the
 * service's clock: a busy app's log stream would otherwise make them once an op call.
 */
export function streamAccess(
  ctx: Services,
  request: FastifyRequest,
  viaSession: boolean,
  authorize: (principal: Principal | null) => Promise<unknown>,
): NonNullable<StreamOptions["allowed"]> {
  const session = viaSession ? request.cookies[sessionCookieName(ctx.config.baseUrl)] : undefined;
  let allowedAt = -Infinity;
  return async () => {
    if (session !== undefined && !(await stillSignedIn(ctx, session))) return sessionEnded();
    const now = ctx.clock.now();
    if (now - allowedAt < ACCESS_RECHECK_MS) return null;
    try {
      await authorize(await principalWithQueryToken(ctx, request, { again: true }));
      allowedAt = now;
      return null;
    } catch (error) {
      // A refusal ends the stream; anything else (a store hiccup) is not one (sse.ts).
      if (error instanceof ApiError) return error;
      throw error;
    }
  };
}

/** Whether a stream was opened by a session cookie (its end is then `sse_cookie_expired`). */
export const bySession = (principal: Principal | null): boolean => principal?.kind === "user" && principal.via === "session";

export const sessionEnded = (): ApiError => apiError("sse_cookie_expired", "the session behind this stream has ended; sign in again and reconnect");

/** Whether the session behind a cookie stream still holds. */
export async function stillSignedIn(ctx: Services, cookie: string): Promise<boolean> {
  try {
    return (await ctx.sessions.resolve(cookie)) !== null;
  } catch (error) {
    // A refusal (a suspended account) ends the stream; a store hiccup is not a sign-out, and
    // the next ping checks again.
    return !(error instanceof ApiError);
  }
}
