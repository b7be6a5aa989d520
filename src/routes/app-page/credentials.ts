import type { FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { can, requirePermission } from "../../domain/access/access.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import { apiError } from "../../errors/index.ts";
import type { Principal } from "../../http/auth.ts";
import { publicOrigin } from "../../http/custom-hosts.ts";
import { readClaimCookie } from "../pages/claimCookie.ts";

/**
 * Which credential may do what on the browser-facing routes (spec Authentication rule 1). Each
 * function throws the refusal: 401 without credentials, 403 for a credential that does not
 * authorize this app or operation, 404 where a user has no relation to a claimed app.
 */

function missing(): never {
  throw apiError("unauthorized", "send a token as 'Authorization: Bearer …' (or a render token as ?t=)");
}

function boundElsewhere(kind: string): never {
  throw apiError("forbidden", `this ${kind} token belongs to another app`);
}

/** Reports and feedback from the page: a token bound to the app, or a user who may open it. */
export async function requireReporter(ctx: Services, principal: Principal | null, app: AppRecord): Promise<{ userId: string | null }> {
  if (principal === null) missing();
  switch (principal.kind) {
    case "app":
      if (principal.appId !== app.id) boundElsewhere("app");
      return { userId: null };
    case "render":
      if (principal.appId !== app.id) boundElsewhere("render");
      requirePermission(await ctx.apps.roleOf(principal, app), app, "view");
      return { userId: principal.userId };
    case "user":
      requirePermission(await ctx.apps.roleOf(principal, app), app, "view");
      return { userId: principal.userId };
  }
}

/**
 * Assets (spec rule 1): app, user or render token, or the claim cookie. The claim cookie holds the
 * app token and, being a cookie, must come with our Origin on writes. Any page of the app may
 * read its assets; on a claimed app only the owner and those who may edit it (collaborators)
 * change them, not a visitor of a public or signed-in app.
 */
export async function requireAssetUser(ctx: Services, request: FastifyRequest, principal: Principal | null, app: AppRecord): Promise<void> {
  if (principal === null) {
    const cookie = readClaimCookie(request, app.id);
    if (cookie === null) missing();
    if (request.method !== "GET" && request.headers.origin !== publicOrigin(request, ctx.config.baseUrl)) {
      throw apiError("forbidden", "a cookie-authenticated change must come from this service's own pages (Origin mismatch)");
    }
    const holder = await ctx.tokens.authenticate(cookie);
    if (holder.kind !== "app" || holder.appId !== app.id) boundElsewhere("claim cookie's");
    return;
  }
  switch (principal.kind) {
    case "app":
      if (principal.appId !== app.id) boundElsewhere("app");
      return;
    case "render": {
      if (principal.appId !== app.id) boundElsewhere("render");
      // The page's token counts only while the person who opened the page may still open it.
      const role = requirePermission(await ctx.apps.roleOf(principal, app), app, "view");
      if (request.method !== "GET" && app.ownerUserId !== null && principal.userId !== app.ownerUserId && !can(role, "source:write")) {
        throw apiError("forbidden", "only the pages of people who may edit this app can change its assets");
      }
      return;
    }
    case "user":
      // Anyone the app is shared with reads its assets (its page shows them anyway); those who
      // may edit it change them. An unclaimed app's assets go with its token.
      if (app.ownerUserId === null) throw apiError("forbidden", "this app is unclaimed; use its app token");
      requirePermission(await ctx.apps.roleOf(principal, app), app, request.method === "GET" ? "view" : "source:write");
  }
}
