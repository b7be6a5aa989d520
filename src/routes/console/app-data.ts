import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { authorizeActivity } from "../../domain/diagnostics/access.ts";
import { ownerSecretScope } from "../../domain/secrets/access.ts";
import { apiError } from "../../errors/index.ts";
import { can, requirePermission } from "../../domain/access/access.ts";
import { ASSET_QUOTA_BYTES, checkUploadKey } from "../../domain/app-page/assets.ts";
import type { ShareRole } from "../../domain/shares/shares.ts";
import type { App } from "../../http/types.ts";
import { assetsTab, sharesTab, feedbackTab, secretsTab } from "../../web/pages/console/tabs.ts";
import { consoleKit, ItemParams, Params } from "./opened.ts";
import { viewerAudit } from "../pages/viewer.ts";

/** An app's secrets (names only), assets, feedback and sharing. */
export default function appData(app: App, ctx: Services): void {
  const { open, page, back, user, summary } = consoleKit(ctx);
  app.get("/apps/:id/secrets", { schema: { ...summary("secrets"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return page(reply, o, "secrets", secretsTab(o.app.id, await ctx.secrets.names(await ownerSecretScope(user(o), o.app, ctx.apps))));
  });
  app.post(
    "/apps/:id/secrets",
    { schema: { ...summary("set a secret"), params: Params, body: Type.Object({ name: Type.String({ maxLength: 64 }), value: Type.String({ maxLength: 65536 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      await ctx.secrets.put(await ownerSecretScope(user(o), o.app, ctx.apps), request.body.name, request.body.value);
      return back(reply, o, "secrets");
    },
  );
  app.post("/apps/:id/secrets/:item/delete", { schema: { ...summary("delete a secret"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.secrets.delete(await ownerSecretScope(user(o), o.app, ctx.apps), request.params.item);
    return back(reply, o, "secrets");
  });

  app.get("/apps/:id/assets", { schema: { ...summary("assets"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return page(reply, o, "assets", assetsTab(o.app.id, await ctx.assets.list(o.app.id), ASSET_QUOTA_BYTES, can(o.role, "source:write")));
  });
  app.post(
    "/apps/:id/assets/delete",
    { schema: { ...summary("delete an asset"), params: Params, body: Type.Object({ key: Type.String({ maxLength: 1024 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      // As DELETE /app/{id}/assets/*: those who may edit the app change its assets.
      requirePermission(o.role, o.app, "source:write");
      if (!(await ctx.assets.delete(o.app.id, checkUploadKey(request.body.key)))) throw apiError("not_found", `no asset ${request.body.key}`);
      return back(reply, o, "assets");
    },
  );

  app.get("/apps/:id/feedback", { schema: { ...summary("feedback"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    // Read as GET /app/{id}/feedback is: the owner only.
    await authorizeActivity({ ...user(o), via: "session" }, o.app, ctx.apps);
    return page(reply, o, "feedback", feedbackTab(o.app.id, await ctx.feedback.list(o.app.id)));
  });
  app.post(
    "/apps/:id/feedback/:item/reply",
    { schema: { ...summary("reply to feedback by mail"), params: ItemParams, body: Type.Object({ text: Type.String({ maxLength: 20_000 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      await authorizeActivity({ ...user(o), via: "session" }, o.app, ctx.apps);
      await ctx.feedbackReplies.reply(o.app, request.params.item, request.body.text, o.viewer.handle);
      return back(reply, o, "feedback");
    },
  );

  app.get("/apps/:id/shares", { schema: { ...summary("sharing"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return page(reply, o, "shares", sharesTab(o.app.id, await ctx.shares.list(o.app.id, user(o))));
  });
  app.post(
    "/apps/:id/shares",
    { schema: { ...summary("invite someone"), params: Params, body: Type.Object({ grantee: Type.String({ maxLength: 254 }), role: Type.String({ enum: ["collaborator", "end-user", "viewer"] }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      await ctx.shares.invite(o.app.id, user(o), { grantee: request.body.grantee.trim(), role: request.body.role as ShareRole }, viewerAudit(request, o.viewer));
      return back(reply, o, "shares");
    },
  );
  app.post("/apps/:id/shares/:item/revoke", { schema: { ...summary("revoke a share"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.shares.revoke(o.app.id, user(o), request.params.item, viewerAudit(request, o.viewer));
    return back(reply, o, "shares");
  });
}
