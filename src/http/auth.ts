import type { FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config/config.ts";
import { SESSION_ABSOLUTE_MS, type Sessions } from "../domain/accounts/sessions.ts";
import type { Apps } from "../domain/apps/apps.ts";
import type { AppRecord } from "../domain/apps/queries.ts";
import type { TokenPrincipal, Tokens } from "../domain/tokens/tokens.ts";
import { apiError, ApiError } from "../errors/index.ts";
import { toolLayerPrincipal } from "./tool-layer.ts";
import { publicOrigin } from "./custom-hosts.ts";
import { networkOf } from "./rate-limit/network.ts";

/** What telling who sends a request takes: the token and session services, and the service's origin. */
export interface AuthDeps {
  config: Pick<Config, "baseUrl">;
  tokens: Pick<Tokens, "authenticate">;
  sessions: Pick<Sessions, "resolve">;
}

/** As AuthDeps, with the app read an op call's principal comes with (principalAndApp). */
export interface AuthAndAppDeps extends AuthDeps {
  apps: Pick<Apps, "find" | "getWithTokenEpoch">;
}

export type UserPrincipal =
  | { kind: "user"; userId: string; via: "token"; tokenId: string }
  | { kind: "user"; userId: string; via: "session"; sessionId: string }
  // An OAuth access token (DECISIONS §17): accepted only by the MCP endpoints it is bound to,
  // and by the REST routes their tools run in-process (tool-layer.ts carries it there).
  | { kind: "user"; userId: string; via: "oauth"; grantId: string };

export type Principal = UserPrincipal | Exclude<TokenPrincipal, { kind: "user" }>;

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const resolved = new WeakMap<FastifyRequest, Promise<Principal | null>>();

export function sessionCookieName(baseUrl: string): string {
  return baseUrl.startsWith("https:") ? "__Host-svc_session" : "svc_session";
}

/**
 * The request's principal, resolved once per request: a bearer token if one is sent (it wins
 * over cookies), else the session cookie, else null. Token failures throw their 401s.
 */
export function principalOf(ctx: AuthDeps, request: FastifyRequest, tokenEpoch?: number): Promise<Principal | null> {
  let pending = resolved.get(request);
  if (pending === undefined) {
    pending = resolve(ctx, request, tokenEpoch);
    resolved.set(request, pending);
  }
  return pending;
}

/** The request's credential resolved again, past `principalOf`'s memo: does it still hold (a long-lived stream asks)? */
export function principalAgain(ctx: AuthDeps, request: FastifyRequest): Promise<Principal | null> {
  return resolve(ctx, request, undefined);
}

/** `principalOf` for a page, which offers sign-in for a credential that fails rather than a JSON 401. */
export async function pagePrincipalOf(ctx: AuthDeps, request: FastifyRequest): Promise<Principal | null> {
  return principalOf(ctx, request).catch((error: unknown) => {
    if (error instanceof ApiError) return null;
    throw error;
  });
}

/**
 * The principal and `read` at once: on PostgreSQL the two round trips overlap instead of adding
 * up. The principal's refusal wins over the read's, as if it had been resolved first (a bad token
 * learns nothing of what the read would have found).
 */
async function principalWith<T>(ctx: AuthDeps, request: FastifyRequest, read: Promise<T>): Promise<[Principal | null, T]> {
  const [principal, value] = await Promise.allSettled([principalOf(ctx, request), read]);
  if (principal.status === "rejected") throw principal.reason;
  if (value.status === "rejected") throw value.reason;
  return [principal.value, value.value];
}

/**
 * An op call's principal and app from one read on the hot path: the app's row comes with the
 * token epoch, under which a bearer token's row this process already read is trusted as is
 * (Tokens.authenticate), so the call makes no token query of its own. As in principalWith, the
 * principal's refusal wins over the app's (malformed id, no such app).
 */
export async function principalAndApp(ctx: AuthAndAppDeps, request: FastifyRequest, appId: string): Promise<[Principal | null, AppRecord]> {
  if (request.headers.authorization === undefined) return principalWith(ctx, request, ctx.apps.find(appId));
  const { app, tokenEpoch } = await ctx.apps.getWithTokenEpoch(appId);
  const principal = await principalOf(ctx, request, tokenEpoch);
  return [principal, app ?? (await ctx.apps.find(appId))];
}

async function resolve(ctx: AuthDeps, request: FastifyRequest, tokenEpoch: number | undefined): Promise<Principal | null> {
  const delegated = toolLayerPrincipal(request);
  if (delegated !== null) return delegated;
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match?.[1] === undefined) {
      throw apiError("unauthorized", "the Authorization header must be 'Bearer <token>'", { reason: "token_malformed" });
    }
    const principal = await ctx.tokens.authenticate(match[1], tokenEpoch);
    return principal.kind === "user" ? { ...principal, via: "token" } : principal;
  }
  const cookie = request.cookies[sessionCookieName(ctx.config.baseUrl)];
  if (cookie === undefined || cookie === "") return null;
  const session = await ctx.sessions.resolve(cookie);
  if (session === null) return null;
  // A cookie rides along on cross-site requests; a mutation must prove it came from our pages.
  if (!SAFE_METHODS.has(request.method) && request.headers.origin !== publicOrigin(request, ctx.config.baseUrl)) {
    throw apiError("forbidden", "a cookie-authenticated change must come from this service's own pages (Origin mismatch)");
  }
  return { kind: "user", userId: session.userId, via: "session", sessionId: session.sessionId };
}

export interface RequireUserOptions {
  /** `only`: session cookie only (personal access tokens refused); `never`: tokens only. */
  session?: "allowed" | "only" | "never";
}

/** The signed-in user, or the right 401: no credentials, or a credential that is not a user's. */
export async function requireUser(ctx: AuthDeps, request: FastifyRequest, options: RequireUserOptions = {}): Promise<UserPrincipal> {
  const principal = await principalOf(ctx, request);
  if (principal === null) throw apiError("sign_in_required", "sign in, or send a user token as 'Authorization: Bearer svc_user_…'");
  if (principal.kind !== "user") throw apiError("unauthorized", `a ${principal.kind} token cannot do this; a user token or session is needed`);
  const mode = options.session ?? "allowed";
  if (mode === "only" && principal.via !== "session") throw apiError("unauthorized", "this operation accepts only a browser session, not a token");
  if (mode === "never" && principal.via === "session") throw apiError("unauthorized", "this operation needs a user token");
  return principal;
}

export function setSessionCookie(ctx: { config: Pick<Config, "baseUrl"> }, reply: FastifyReply, value: string): void {
  void reply.setCookie(sessionCookieName(ctx.config.baseUrl), value, {
    path: "/",
    httpOnly: true,
    sameSite: "lax",
    secure: ctx.config.baseUrl.startsWith("https:"),
    maxAge: SESSION_ABSOLUTE_MS / 1000,
  });
}

export function clearSessionCookie(ctx: { config: Pick<Config, "baseUrl"> }, reply: FastifyReply): void {
  void reply.clearCookie(sessionCookieName(ctx.config.baseUrl), { path: "/", secure: ctx.config.baseUrl.startsWith("https:") });
}

/** The client's address, as records keep it (audit rows, reports, logs). */
export function clientIp(request: FastifyRequest): string {
  return request.ip;
}

/**
 * The client as every per-address limit counts it: an IPv4 address, or an IPv6 client's /64
 * (networkOf), since one IPv6 client holds billions of addresses and counting each would count
 * nothing.
 */
export function clientNetwork(request: Pick<FastifyRequest, "ip">): string {
  return networkOf(request.ip);
}

/**
 * Whose share a request counts against, where shares are kept per caller (write lanes, open
 * event streams): the signed-in person's when there is one, else the client network's.
 */
export function shareKey(request: FastifyRequest, userId: string | null): string {
  return userId === null ? `address:${clientNetwork(request)}` : `user:${userId}`;
}
