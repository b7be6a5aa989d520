import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { can } from "../../domain/access/access.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { domainsTab } from "../../web/pages/console/domains.ts";
import { COPY_SCRIPT } from "../../web/pages/mcp-setup.ts";
import { consoleKit, ItemParams, Params, type Opened } from "./opened.ts";

/** An app's custom domains in the console (DECISIONS §12): the REST routes' twins as forms. */
export default function appDomains(app: App, ctx: Services): void {
  const { open, page, back, summary } = consoleKit(ctx);
  const render = async (reply: FastifyReply, o: Opened, error: string | null, status = 200) => {
    const plan = await ctx.runner.planOf(o.app.ownerUserId);
    const body = domainsTab(o.app.id, await ctx.domains.list(o.app.id), { ownerRights: can(o.role, "manage"), planAllows: PLAN_LIMITS[plan].custom_domain, error });
    return page(reply, o, "domains", body, COPY_SCRIPT, status);
  };
  /** The app, opened by someone with the owner's rights. */
  const manage = async (request: Parameters<typeof open>[0], id: string, reply: FastifyReply) => {
    const o = await open(request, id, reply);
    if (o !== null && !can(o.role, "manage")) throw apiError("forbidden", "only those with the owner's rights change an app's domains");
    return o;
  };
  /** A refusal a person can act on is shown on the tab; anything else goes to the page scope's handler. */
  const orShow = async (reply: FastifyReply, o: Opened, action: () => Promise<unknown>) => {
    try {
      await action();
    } catch (error) {
      if (error instanceof ApiError && error.kind !== "not_found" && (error.status < 500 || error.kind === "domain_provider_unavailable")) return render(reply, o, error.message, error.status);
      throw error;
    }
    return back(reply, o, "domains");
  };

  // Domains and their TXT values are the owner's business, as the API lists them (DECISIONS §12).
  app.get("/apps/:id/domains", { schema: { ...summary("custom domains"), params: Params } }, async (request, reply) => {
    const o = await manage(request, request.params.id, reply);
    return o === null ? reply : render(reply, o, null);
  });
  app.post(
    "/apps/:id/domains",
    { schema: { ...summary("add a custom domain"), params: Params, body: Type.Object({ hostname: Type.String({ minLength: 1, maxLength: 300 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await manage(request, request.params.id, reply);
      if (o === null) return reply;
      const plan = await ctx.runner.planOf(o.app.ownerUserId);
      return orShow(reply, o, () => ctx.domains.add(o.app.id, plan, request.body.hostname));
    },
  );
  app.post("/apps/:id/domains/:item/verify", { schema: { ...summary("verify a custom domain now"), params: ItemParams } }, async (request, reply) => {
    const o = await manage(request, request.params.id, reply);
    if (o === null) return reply;
    return orShow(reply, o, () => ctx.domains.verify(o.app.id, request.params.item));
  });
  app.post("/apps/:id/domains/:item/remove", { schema: { ...summary("remove a custom domain"), params: ItemParams } }, async (request, reply) => {
    const o = await manage(request, request.params.id, reply);
    if (o === null) return reply;
    await ctx.domains.remove(o.app.id, request.params.item);
    return back(reply, o, "domains");
  });
}
