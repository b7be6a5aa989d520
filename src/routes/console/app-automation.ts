import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { WebhookView } from "../../domain/webhooks/views.ts";
import { apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { deliveriesBody, routinesTab, webhooksTab } from "../../web/pages/console/tabs.ts";
import { COPY_SCRIPT } from "../../web/pages/mcp-setup.ts";
import { consoleKit, ItemParams, Params, Toggle, type Opened } from "./opened.ts";

/** An app's routines and webhooks (with deliveries; a webhook's secret shown once, on creation or rotation). */
export default function appAutomation(app: App, ctx: Services): void {
  const { open, page, back, ops, summary } = consoleKit(ctx);
  app.get("/apps/:id/routines", { schema: { ...summary("routines"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return page(reply, o, "routines", routinesTab(o.app.id, await ctx.routines.listForApp(o.viewer.userId, o.app.id), ops(o)));
  });
  app.post(
    "/apps/:id/routines",
    { schema: { ...summary("create a routine"), params: Params, body: Type.Object({ op: Type.String({ maxLength: 64 }), interval: Type.String({ maxLength: 40 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      await ctx.routines.create(o.viewer.userId, o.app.id, request.body);
      return back(reply, o, "routines");
    },
  );
  app.post("/apps/:id/routines/:item/run", { schema: { ...summary("run a routine now"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.routines.runNow(o.viewer.userId, request.params.item);
    return back(reply, o, "routines");
  });
  app.post("/apps/:id/routines/:item/toggle", { schema: { ...summary("enable or disable a routine"), params: ItemParams, body: Toggle } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.routines.update(o.viewer.userId, request.params.item, { enabled: request.body.enabled === "true" });
    return back(reply, o, "routines");
  });

  const webhooksPage = async (reply: FastifyReply, o: Opened, revealed: WebhookView | null) =>
    page(reply, o, "webhooks", webhooksTab(o.app.id, await ctx.webhooks.listForApp(o.viewer.userId, o.app.id), ops(o), revealed), COPY_SCRIPT);
  app.get("/apps/:id/webhooks", { schema: { ...summary("webhooks"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    return o === null ? reply : webhooksPage(reply, o, null);
  });
  app.post(
    "/apps/:id/webhooks",
    { schema: { ...summary("create a webhook"), params: Params, body: Type.Object({ op: Type.String({ maxLength: 64 }), name: Type.Optional(Type.String({ maxLength: 80 })) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      const name = request.body.name?.trim();
      const created = await ctx.webhooks.create(o.viewer.userId, o.app.id, { op: request.body.op, ...(name === undefined || name === "" ? {} : { name }) });
      // The secret is shown in this answer only (the page is no-store), never again.
      return webhooksPage(reply, o, created);
    },
  );
  app.post("/apps/:id/webhooks/:item/rotate", { schema: { ...summary("rotate a webhook's secret"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return webhooksPage(reply, o, await ctx.webhooks.update(o.viewer.userId, request.params.item, { rotate_secret: true }));
  });
  app.post("/apps/:id/webhooks/:item/toggle", { schema: { ...summary("enable or disable a webhook"), params: ItemParams, body: Toggle } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.webhooks.update(o.viewer.userId, request.params.item, { enabled: request.body.enabled === "true" });
    return back(reply, o, "webhooks");
  });
  app.post(
    "/apps/:id/webhooks/:item/rename",
    { schema: { ...summary("rename a webhook"), params: ItemParams, body: Type.Object({ name: Type.String({ maxLength: 80 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      const name = request.body.name.trim();
      if (name === "") throw apiError("invalid_request", "a webhook needs a name");
      await ctx.webhooks.update(o.viewer.userId, request.params.item, { rename: name });
      return reply.redirect(`/apps/${o.app.id}/webhooks/${request.params.item}`, 303);
    },
  );
  app.post("/apps/:id/webhooks/:item/delete", { schema: { ...summary("delete a webhook"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.webhooks.delete(o.viewer.userId, request.params.item);
    return back(reply, o, "webhooks");
  });
  app.get("/apps/:id/webhooks/:item", { schema: { ...summary("a webhook's deliveries"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    const webhook = (await ctx.webhooks.listForApp(o.viewer.userId, o.app.id)).find((w) => w.id === request.params.item);
    if (webhook === undefined) throw apiError("not_found", "no such webhook on this app");
    return page(reply, o, "webhooks", deliveriesBody(o.app.id, webhook, await ctx.webhooks.deliveries(o.viewer.userId, webhook.id, { limit: 50 })));
  });

}
