import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";

/** `svc_claim_<id>`: the app token, held HttpOnly by the browser that opened the claim link. */
export function claimCookieName(appId: string): string {
  return `svc_claim_${appId}`;
}

export function readClaimCookie(request: FastifyRequest, appId: string): string | null {
  const value = request.cookies[claimCookieName(appId)];
  return value === undefined || value === "" ? null : value;
}

export function setClaimCookie(ctx: Services, reply: FastifyReply, appId: string, token: string, expiresAt: number | null): void {
  void reply.setCookie(claimCookieName(appId), token, {
    // Only this app's routes see it (claim, assets); it lives no longer than the unclaimed app.
    path: `/app/${appId}`,
    httpOnly: true,
    sameSite: "lax",
    secure: ctx.config.baseUrl.startsWith("https:"),
    ...(expiresAt === null ? {} : { expires: new Date(expiresAt) }),
  });
}

export function clearClaimCookie(ctx: Services, reply: FastifyReply, appId: string): void {
  void reply.clearCookie(claimCookieName(appId), { path: `/app/${appId}`, secure: ctx.config.baseUrl.startsWith("https:") });
}
