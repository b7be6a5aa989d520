import { Type } from "typebox";
import type { FastifyReply } from "fastify";
import { apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import type { Services } from "../../services.ts";
import { sendPage } from "../../web/layout.ts";
import { appDetailPage, appsPage, auditPage, reportsPage, usersPage } from "../../web/pages/admin.ts";
import { viewerOf } from "../pages/viewer.ts";
import { signInPage } from "../../web/pages/common.ts";
import { auditFilter } from "./api.ts";
import { gateOperators, operator } from "./operator.ts";

const Search = Type.Object({ q: Type.Optional(Type.String({ maxLength: 200 })) });
const AuditQuery = Type.Object({
  actor: Type.Optional(Type.String({ maxLength: 100 })),
  action: Type.Optional(Type.String({ maxLength: 40 })),
  target: Type.Optional(Type.String({ maxLength: 100 })),
  since: Type.Optional(Type.String({ maxLength: 40 })),
  until: Type.Optional(Type.String({ maxLength: 40 })),
});
const AppParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
const UserParams = Type.Object({ handle: Type.String({ maxLength: 40 }) });
const Reason = Type.Object({ reason: Type.String({ minLength: 1, maxLength: 2000 }) }, { additionalProperties: false });
const summary = (what: string) => ({ tags: ["pages"], summary: `Admin: ${what} (HTML, operators)` });

/**
 * `/admin` (DECISIONS §15), in the page scope (forms, the Origin rule, HTML errors): reports,
 * apps, users and the audit log, each action a form that posts back here. A 404 page to anyone
 * but an operator. And `/account/audit`, a person's own rows.
 */
export default function adminPages(app: App, ctx: Services): void {
  void app.register((scope: App, _options, done) => {
    scope.addHook("preValidation", gateOperators(ctx));
    const handle = (request: Parameters<typeof operator>[0]) => operator(request).user.handle;

    scope.get("/admin", { schema: summary("home") }, async (_request, reply) => reply.redirect("/admin/reports", 303));
    scope.get("/admin/reports", { schema: summary("abuse reports") }, async (request, reply) => sendPage(reply, reportsPage(handle(request), await ctx.abuseReports.list(100))));
    scope.get("/admin/apps", { schema: { ...summary("apps"), querystring: Search } }, async (request, reply) => {
      const q = request.query.q ?? "";
      const apps = (await ctx.directory.apps(q)).map((a) => ({ ...a, quarantinedForMs: ctx.executor.pool.quarantineLeft(a.id, a.ownerId) }));
      return sendPage(reply, appsPage(handle(request), q, apps));
    });
    scope.get("/admin/apps/:id", { schema: { ...summary("one app"), params: AppParams } }, async (request, reply) => {
      const [found] = (await ctx.directory.apps(request.params.id)).filter((a) => a.id === request.params.id);
      if (found === undefined) throw apiError("app_not_found", "no such app");
      const reports = await ctx.abuseReports.list(50, found.id);
      const audit = await ctx.auditLog.list({ targetId: found.id, limit: 50 });
      return sendPage(reply, appDetailPage(handle(request), { ...found, quarantinedForMs: ctx.executor.pool.quarantineLeft(found.id, found.ownerId) }, reports, audit));
    });
    scope.post("/admin/apps/:id/suspend", { schema: { ...summary("suspend an app"), params: AppParams, body: Reason } }, async (request, reply) => {
      await ctx.suspensions.suspendApp(request.params.id, request.body.reason, operator(request).audit);
      return reply.redirect(`/admin/apps/${request.params.id}`, 303);
    });
    scope.post("/admin/apps/:id/unsuspend", { schema: { ...summary("lift an app's suspension"), params: AppParams } }, async (request, reply) => {
      await ctx.suspensions.unsuspendApp(request.params.id, operator(request).audit);
      return reply.redirect(`/admin/apps/${request.params.id}`, 303);
    });
    scope.post("/admin/apps/:id/delete", { schema: { ...summary("delete an app"), params: AppParams, body: Type.Object({ confirm: Type.String({ maxLength: 100 }) }, { additionalProperties: false }) } }, async (request, reply) => {
      if (request.body.confirm.trim() !== request.params.id) throw apiError("invalid_request", "type the app's id to confirm the deletion");
      if (!(await ctx.apps.deleteById(request.params.id, undefined, operator(request).audit))) throw apiError("app_not_found", "no such app");
      return reply.redirect("/admin/apps", 303);
    });
    scope.get("/admin/users", { schema: { ...summary("users"), querystring: Search } }, async (request, reply) => {
      const q = request.query.q ?? "";
      return sendPage(reply, usersPage(handle(request), q, await ctx.directory.users(q)));
    });
    scope.post("/admin/users/:handle/suspend", { schema: { ...summary("suspend an account"), params: UserParams, body: Reason } }, async (request, reply) => {
      await ctx.suspensions.suspendUser(request.params.handle, request.body.reason, operator(request).audit);
      return reply.redirect(`/admin/users?q=${encodeURIComponent(request.params.handle)}`, 303);
    });
    scope.post("/admin/users/:handle/unsuspend", { schema: { ...summary("lift an account's suspension"), params: UserParams } }, async (request, reply) => {
      await ctx.suspensions.unsuspendUser(request.params.handle, operator(request).audit);
      return reply.redirect(`/admin/users?q=${encodeURIComponent(request.params.handle)}`, 303);
    });
    scope.get("/admin/audit", { schema: { ...summary("audit log"), querystring: AuditQuery } }, async (request, reply) => {
      const q = request.query;
      const rows = await ctx.auditLog.list(auditFilter({ ...q, limit: 200 }));
      return sendPage(reply, auditPage(handle(request), rows, { actor: q.actor ?? "", action: q.action ?? "", target: q.target ?? "", since: q.since ?? "", until: q.until ?? "" }));
    });
    done();
  });

  app.get("/account/audit", { schema: { tags: ["pages"], summary: "Your audit log: what you did and what operators did to your account and apps (HTML)" } }, async (request, reply) => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) return sendPage(reply, signInPage({ returnTo: "/account/audit", intro: "Sign in to see your audit log." }), 401);
    return ownAudit(ctx, reply, viewer);
  });
}

/**
 * A person's rows: what they did, and what was done to their account and apps. Whoever else
 * acted is not named to them, nor their address (an operator's included).
 */
async function ownAudit(ctx: Services, reply: FastifyReply, viewer: { userId: string; handle: string }): Promise<FastifyReply> {
  const rows = (await ctx.auditLog.listForPerson(viewer.userId, 200)).map((row) => (row.actor.id === viewer.userId ? row : { ...row, actor: { kind: "other", id: null, handle: null }, ip: null }));
  return sendPage(reply, auditPage(viewer.handle, rows, null));
}

