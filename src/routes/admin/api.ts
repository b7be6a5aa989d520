import { Type } from "typebox";
import type { AppListing, AuditFilter, AuditRow, UserListing } from "../../domain/operators/index.ts";
import { ABUSE_REASONS } from "../../domain/operators/index.ts";
import { apiError } from "../../errors/index.ts";
import { ok, OkOnly, security as userSecurity } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import type { Services } from "../../services.ts";
import { gateOperators, operator } from "./operator.ts";

const security = userSecurity.user;
const tags = ["admin"];
const Reason = Type.Object({ reason: Type.String({ minLength: 1, maxLength: 2000 }) }, { additionalProperties: false });
const Search = Type.Object({ q: Type.Optional(Type.String({ maxLength: 200, description: "apps: an id, part of a name, an owner's handle, or `anonymous`; users: part of a handle or email" })) });
const AuditQuery = Type.Object({
  actor: Type.Optional(Type.String({ maxLength: 100, description: "the actor's handle" })),
  action: Type.Optional(Type.String({ maxLength: 40 })),
  target: Type.Optional(Type.String({ maxLength: 100, description: "a target's id" })),
  since: Type.Optional(Type.String({ maxLength: 40, description: "ISO 8601: rows at or after it" })),
  until: Type.Optional(Type.String({ maxLength: 40, description: "ISO 8601: rows before it" })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
});
const Obj = Type.Object({}, { additionalProperties: true });

/**
 * `/api/v1/admin/...` (DECISIONS §15): the operator's pages as JSON, for scripts. Every route is
 * behind the operator gate, which answers 404 `not_found` to anyone else before looking at the
 * request; each action commits with its audit row.
 */
export default function adminApi(app: App, ctx: Services): void {
  void app.register((scope: App, _options, done) => {
    scope.addHook("preValidation", gateOperators(ctx));

    scope.get("/api/v1/admin/users", { schema: { tags, security, summary: "Accounts, newest first (operators)", querystring: Search, response: { 200: ok({ users: Type.Array(Obj) }) } } }, async (request) => ({
      ok: true as const,
      users: (await ctx.directory.users(request.query.q ?? "")).map(userView),
    }));
    scope.post("/api/v1/admin/users/:handle/suspend", { schema: { tags, security, summary: "Suspend an account: its sign-in, sessions, tokens and apps stop (operators)", params: Type.Object({ handle: Type.String({ maxLength: 40 }) }), body: Reason, response: { 200: OkOnly } } }, async (request) => {
      await ctx.suspensions.suspendUser(request.params.handle, request.body.reason, operator(request).audit);
      return { ok: true as const };
    });
    scope.post("/api/v1/admin/users/:handle/unsuspend", { schema: { tags, security, summary: "Lift an account's suspension (operators)", params: Type.Object({ handle: Type.String({ maxLength: 40 }) }), response: { 200: OkOnly } } }, async (request) => {
      await ctx.suspensions.unsuspendUser(request.params.handle, operator(request).audit);
      return { ok: true as const };
    });

    scope.get("/api/v1/admin/apps", { schema: { tags, security, summary: "Apps, newest first, with storage, the last day's calls and quarantine (operators)", querystring: Search, response: { 200: ok({ apps: Type.Array(Obj) }) } } }, async (request) => ({
      ok: true as const,
      apps: (await ctx.directory.apps(request.query.q ?? "")).map((a) => appView(a, ctx.executor.pool.quarantineLeft(a.id, a.ownerId))),
    }));
    const AppParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
    scope.post("/api/v1/admin/apps/:id/suspend", { schema: { tags, security, summary: "Suspend an app: its page, operations, webhooks, MCP tools and routines stop; its data is kept (operators)", params: AppParams, body: Reason, response: { 200: OkOnly } } }, async (request) => {
      await ctx.suspensions.suspendApp(request.params.id, request.body.reason, operator(request).audit);
      return { ok: true as const };
    });
    scope.post("/api/v1/admin/apps/:id/unsuspend", { schema: { tags, security, summary: "Lift an app's suspension (operators)", params: AppParams, response: { 200: OkOnly } } }, async (request) => {
      await ctx.suspensions.unsuspendApp(request.params.id, operator(request).audit);
      return { ok: true as const };
    });
    scope.delete("/api/v1/admin/apps/:id", { schema: { tags, security, summary: "Delete an app with everything it owns (operators)", params: AppParams, response: { 200: OkOnly } } }, async (request) => {
      if (!(await ctx.apps.deleteById(request.params.id, undefined, operator(request).audit))) throw apiError("app_not_found", `no app ${request.params.id}`);
      return { ok: true as const };
    });

    scope.get("/api/v1/admin/reports", { schema: { tags, security, summary: "Abuse reports, newest first (operators)", querystring: Type.Object({ app: Type.Optional(Type.String({ maxLength: 100 })) }), response: { 200: ok({ reports: Type.Array(Obj) }) } } }, async (request) => ({
      ok: true as const,
      reports: (await ctx.abuseReports.list(100, request.query.app)).map((r) => ({ id: r.id, appId: r.appId, reason: r.reason, reasonText: ABUSE_REASONS[r.reason], details: r.details, reporterIp: r.reporterIp, createdAt: iso(r.createdAt) })),
    }));
    scope.get("/api/v1/admin/audit", { schema: { tags, security, summary: "The audit log, newest first, filtered (operators)", querystring: AuditQuery, response: { 200: ok({ entries: Type.Array(Obj) }) } } }, async (request) => ({
      ok: true as const,
      entries: (await ctx.auditLog.list(auditFilter(request.query))).map(auditView),
    }));
    done();
  });
}

/** The audit query of /api/v1/admin/audit and /admin/audit; a bad time is 400 `invalid_request`. */
export function auditFilter(query: { actor?: string; action?: string; target?: string; since?: string; until?: string; limit?: number }): AuditFilter {
  const time = (name: string, value: string | undefined) => {
    if (value === undefined || value === "") return undefined;
    const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
    if (Number.isNaN(at)) throw apiError("invalid_request", `${name} must be an ISO 8601 date or date-time`);
    return at;
  };
  const since = time("since", query.since);
  const until = time("until", query.until);
  const some = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value.trim());
  const actor = some(query.actor)?.replace(/^@/, "");
  const action = some(query.action);
  const target = some(query.target);
  return {
    limit: query.limit ?? 100,
    ...(actor === undefined ? {} : { actorHandle: actor }),
    ...(action === undefined ? {} : { action }),
    ...(target === undefined ? {} : { targetId: target }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
  };
}

export function auditView(row: AuditRow) {
  return { id: row.id, at: iso(row.at), actor: row.actor, action: row.action, target: row.target, ip: row.ip, detail: row.detail };
}

function userView(u: UserListing) {
  return { id: u.id, handle: u.handle, email: u.email, plan: u.plan, role: u.role, kind: u.kind, createdAt: iso(u.createdAt), apps: u.apps, suspension: u.suspension === null ? null : { at: iso(u.suspension.at), reason: u.suspension.reason } };
}

function appView(a: AppListing, quarantineMs: number) {
  return {
    id: a.id,
    name: a.name,
    manifestId: a.manifestId,
    owner: a.ownerHandle,
    claimedAt: a.claimedAt === null ? null : iso(a.claimedAt),
    createdAt: iso(a.createdAt),
    storedBytes: a.storedBytes,
    lastDay: a.lastDay,
    quarantinedForMs: quarantineMs,
    suspension: a.suspension === null ? null : { of: a.suspension.of, at: iso(a.suspension.at), reason: a.suspension.reason },
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
