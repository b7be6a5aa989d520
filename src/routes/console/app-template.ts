import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { TEMPLATE_CATEGORIES, type Listing, type TemplateCategory } from "../../domain/templates/templates.ts";
import type { App } from "../../http/types.ts";
import { templateTab } from "../../web/pages/console/tabs.ts";
import { consoleKit, ItemParams, Params } from "./opened.ts";

/** An app's template listing (issue 19): the draft's text fields, publish and disable, as the API's. */
export default function appTemplate(app: App, ctx: Services): void {
  const { open, page, back, user, summary } = consoleKit(ctx);
  const draft = (l: Listing) => ({
    title: l.draft.title,
    summary: l.draft.summary,
    category: l.draft.category,
    media: [...(l.draft.cover === null ? [] : [l.draft.cover]), ...l.draft.gallery].map((m) => ({ id: m.id, kind: m.kind, url: m.url, alt: m.alt })),
    templateEnabled: l.templateEnabled,
    listed: l.listed,
    missingFields: l.validation.missingFields,
    publicUrl: l.publicUrl,
    publishedRevision: l.publishedRevision,
  });

  app.get("/apps/:id/template", { schema: { ...summary("template"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return page(reply, o, "template", templateTab(o.app.id, draft(await ctx.templates.get(o.app.id, user(o))), TEMPLATE_CATEGORIES));
  });
  app.post(
    "/apps/:id/template",
    {
      schema: {
        ...summary("save the template draft"),
        params: Params,
        body: Type.Object({ title: Type.String({ maxLength: 200 }), summary: Type.String({ maxLength: 400 }), category: Type.String({ maxLength: 40 }) }, { additionalProperties: false }),
      },
    },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      // An empty field clears it, as null does over the API.
      const text = (value: string) => (value.trim() === "" ? null : value.trim());
      await ctx.templates.patch(o.app.id, user(o), {
        title: text(request.body.title),
        summary: text(request.body.summary),
        category: text(request.body.category) as TemplateCategory | null,
      });
      return back(reply, o, "template");
    },
  );
  app.post("/apps/:id/template/publish", { schema: { ...summary("publish the template"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.templates.publish(o.app.id, user(o));
    return back(reply, o, "template");
  });
  app.post("/apps/:id/template/disable", { schema: { ...summary("disable the template"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.templates.disable(o.app.id, user(o));
    return back(reply, o, "template");
  });
  app.post("/apps/:id/template/media/:item/delete", { schema: { ...summary("remove a template image"), params: ItemParams } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.templates.deleteMedia(o.app.id, user(o), request.params.item);
    return back(reply, o, "template");
  });
}
