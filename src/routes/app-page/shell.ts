import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { can } from "../../domain/access/access.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import { SUSPENDED_MESSAGE } from "../../domain/apps/suspended.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { QUERY_TOKEN_TTL_MS } from "../../domain/app-page/render-tokens.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { apiError, ApiError } from "../../errors/index.ts";
import { pagePrincipalOf } from "../../http/auth.ts";
import { customHostOf, openOnDomainPath, publicOrigin } from "../../http/custom-hosts.ts";
import { hostKey, VisitorPasses } from "../../domain/domains/index.ts";
import { newNonce, sendPage } from "../../web/layout.ts";
import { domainSignInPage, errorPage, signInPage } from "../../web/pages/common.ts";
import { sendShell, shellPage } from "../../web/pages/shell.ts";

/** Who is opening a page: allowed (acting for `userId`, null when anonymous) or why not. */
type PageAccess = { allowed: true; userId: string | null; queryToken: string | null } | { allowed: false; signedIn: boolean; expiredLink: boolean };

/**
 * DECISIONS §5: an unclaimed app opens for anyone holding its URL; a claimed one for those who
 * may call it (owner, visibility) and for anyone holding a valid query render token for it, made
 * for someone who still may.
 */
export async function pageAccess(ctx: Services, request: FastifyRequest, app: AppRecord | null, ignoreLink = false): Promise<PageAccess> {
  const principal = await pagePrincipalOf(ctx, request);
  const userId = principal?.kind === "user" ? principal.userId : null;
  const t = (ignoreLink ? undefined : linkToken(request)) ?? (app !== null && customHostOf(request)?.appId === app.id ? request.cookies[hostCookieName(request, DOMAIN_TOKEN_COOKIE)] : undefined);
  let expiredLink = false;
  if (typeof t === "string" && t !== "" && app !== null) {
    const holder = await ctx.tokens.authenticate(t).catch((error: unknown) => {
      if (error instanceof ApiError) return null;
      throw error;
    });
    // Only while the person it was made for may still open the app, as the frame asks (a share
    // revoked, a team left, the app made private or claimed since); and never as someone other
    // than who is signed in: a link carrying another's token had made a signed-in visitor use the
    // app as that person (what they saved, theirs).
    const mine = userId === null || holder?.kind !== "render" || holder.userId === userId;
    if (holder?.kind === "render" && holder.appId === app.id && mine && can(await ctx.apps.roleOf(holder, app), "view")) return { allowed: true, userId: holder.userId, queryToken: t };
    expiredLink = mine;
  }
  if (app !== null && can(await ctx.apps.roleOf(principal, app), "view")) return { allowed: true, userId, queryToken: null };
  return { allowed: false, signedIn: userId !== null, expiredLink };
}

/**
 * Serves the shell of `app` (null: nothing at that address). A refusal never says whether the
 * app exists: a browser gets the sign-in page when anonymous and a 404 page when signed in, an
 * API client (no text/html in Accept) the 404 envelope, whether or not the app is there.
 */
export async function serveShell(ctx: Services, request: FastifyRequest, reply: FastifyReply, app: AppRecord | null): Promise<FastifyReply> {
  const routed = customHostOf(request);
  // A person sent here from the main host (routes/domains/openOnDomain.ts) holds their token in
  // the address, with the state this domain's page left in their browser: only then does it
  // move to a cookie of this domain alone (anyone's link had planted theirs for a day), and the
  // address becomes the app's own, so no copy of the link, bookmark or history entry carries it.
  const state = routed === null ? undefined : queryString(request, "state");
  const handedOver = state !== undefined && state === request.cookies[hostCookieName(request, OPEN_STATE_COOKIE)];
  // On the app's domain its token cookie says who is signed in: another link's token does not replace it.
  const ignoreLink = routed !== null && !handedOver && request.cookies[hostCookieName(request, DOMAIN_TOKEN_COOKIE)] !== undefined;
  const access = await pageAccess(ctx, request, app, ignoreLink);
  if (handedOver && access.allowed && access.userId !== null && access.queryToken !== null && access.queryToken === linkToken(request)) {
    setHostCookie(request, reply, DOMAIN_TOKEN_COOKIE, access.queryToken, QUERY_TOKEN_TTL_MS / 1000);
    setHostCookie(request, reply, OPEN_STATE_COOKIE, "", 0);
    return reply.redirect("/", 303);
  }
  if (!access.allowed || app === null) {
    const missing = apiError("app_not_found", "There is no app here, or it is not shared with you.");
    if (!(request.headers.accept ?? "").includes("text/html")) throw missing;
    if (access.allowed || access.signedIn) return sendPage(reply, errorPage(missing), 404);
    const intro = access.allowed === false && access.expiredLink ? "This link has expired. Sign in to open the app." : "Sign in to open this app.";
    if (routed === null || app === null) return sendPage(reply, signInPage({ returnTo: request.url.split("?")[0] ?? "/", intro }), 401);
    // Sign-in is not served on a custom domain: it happens on the main host, which sends them back.
    const base = ctx.config.baseUrl;
    const opening = randomBytes(16).toString("base64url");
    setHostCookie(request, reply, OPEN_STATE_COOKIE, opening, OPEN_STATE_TTL_S);
    return sendPage(reply, domainSignInPage({ link: `${base}${openOnDomainPath(app.id, hostKey(routed.host) ?? routed.host, opening)}`, intro, service: new URL(base).host }), 401);
  }
  if (app.suspension !== null) {
    // DECISIONS §15: the page says so (403); nothing of the app is served, not even its frame.
    const suspended = apiError("forbidden", `This app has been ${SUSPENDED_MESSAGE}.`);
    if (!(request.headers.accept ?? "").includes("text/html")) throw apiError("forbidden", SUSPENDED_MESSAGE);
    return sendPage(reply, errorPage(suspended), 403);
  }
  const queryToken = access.queryToken ?? (await ctx.renderTokens.mintQuery(app.id, access.userId)).token;
  const base = ctx.config.baseUrl;
  // An anonymous visitor on the app's custom domain has a store of their own (DECISIONS §12).
  const visitor = access.userId === null && customHostOf(request)?.appId === app.id ? visitorPassFor(ctx, request, reply, app.id) : null;
  const nonce = newNonce();
  const page = shellPage({
    // The page's own links (icon, feedback, report) stay on the origin it is served from.
    base: publicOrigin(request, base),
    serviceUrl: base,
    appId: app.id,
    title: app.displayName,
    // On a custom domain the frame is that origin's, as every call it makes (DECISIONS §12).
    frameSrc: `${publicOrigin(request, base)}/app/${app.id}/frame?t=${encodeURIComponent(queryToken)}${visitor === null ? "" : `&v=${encodeURIComponent(visitor)}`}`,
    renderToken: queryToken,
    watermark: !(await ownerRemovesWatermark(ctx, app)),
    prompt: chatPrompt(app, base, app.ownerUserId === null ? queryToken : null),
    nonce,
  });
  return sendShell(reply, page, nonce);
}

/** The query's `t`, a render token in a link. */
function linkToken(request: FastifyRequest): string | undefined {
  return queryString(request, "t");
}

function queryString(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

// A custom domain's own cookies: its visitor's id, and a signed-in person's render token.
const VISITOR_COOKIE = "svc_visitor";
const DOMAIN_TOKEN_COOKIE = "svc_app_token";
// What the domain's sign-in link carries to the main host and back: the token it brings is kept
// only by the browser holding this (ten minutes to sign in).
const OPEN_STATE_COOKIE = "svc_open_state";
const OPEN_STATE_TTL_S = 600;

/** The name of a cookie of this host alone: `__Host-` where the domain is served over https. */
function hostCookieName(request: FastifyRequest, name: string): string {
  return request.protocol === "https" ? `__Host-${name}` : name;
}

/** Sets a cookie of this host alone (see hostCookieName), out of scripts' reach. */
function setHostCookie(request: FastifyRequest, reply: FastifyReply, name: string, value: string, maxAgeSeconds: number): void {
  void reply.setCookie(hostCookieName(request, name), value, { path: "/", httpOnly: true, sameSite: "lax", secure: request.protocol === "https", maxAge: maxAgeSeconds });
}

const VISITOR_COOKIE_DAYS = 365;

/**
 * The pass of the anonymous visitor opening the app's page on its custom domain: their id from
 * the domain's first-party cookie, set here on their first visit, with a MAC the frame sends on.
 */
function visitorPassFor(ctx: Services, request: FastifyRequest, reply: FastifyReply, appId: string): string {
  let id = request.cookies[hostCookieName(request, VISITOR_COOKIE)];
  if (!VisitorPasses.isId(id)) {
    id = VisitorPasses.newId();
    setHostCookie(request, reply, VISITOR_COOKIE, id, VISITOR_COOKIE_DAYS * 24 * 3600);
  }
  return ctx.visitorPasses.pass(appId, id);
}

async function ownerRemovesWatermark(ctx: Services, app: AppRecord): Promise<boolean> {
  if (app.ownerUserId === null) return false;
  const owner = await ctx.users.byId(app.ownerUserId);
  return owner !== null && PLAN_LIMITS[owner.plan].watermark_removal;
}

/**
 * The open-in-chat / copy-prompt text (spec: starter-prompt row): the owner's starter prompt
 * first, then name, description and URL, and for an unclaimed app a token to call it with.
 */
export function chatPrompt(app: AppRecord, base: string, accessToken: string | null): string {
  const lines = [`App: ${app.displayName}`];
  if (app.manifest.description !== null) lines.push(`Description: ${app.manifest.description}`);
  lines.push(`URL: ${canonicalUrl(base, app)}`);
  if (accessToken !== null) lines.push(`Access token (a render token for this app, valid about 24 hours): ${accessToken}`);
  const facts = lines.join("\n");
  return app.starterPrompt === null ? facts : `${app.starterPrompt}\n\n${facts}`;
}
