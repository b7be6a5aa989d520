import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { AppContext } from "../../context.ts";
import type { AppRole } from "../../domain/apps/access.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { authorizeActivity, authorizeDiag } from "../../domain/diagnostics/access.ts";
import { UUID } from "../../domain/ids.ts";
import { ownerSecretScope } from "../../domain/secrets/access.ts";
import type { WebhookView } from "../../domain/webhooks/views.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import { can, requirePermission, VISIBILITIES, type Visibility } from "../../domain/apps/access.ts";
import { ASSET_QUOTA_BYTES } from "../../domain/web/assets.ts";
import { visibleOperations } from "../../domain/apps/operations-view.ts";
import { operationCaller } from "../../domain/operations/caller.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { signInPage } from "../../web/pages/common.ts";
import { appPage, tabPath, type AppTab } from "../../web/pages/console/app.ts";
import { appOverviewBody } from "../../web/pages/console/front.ts";
import {
  assetsTab,
  deliveriesBody,
  feedbackTab,
  diagnosticsTab,
  operationsTab,
  routinesTab,
  secretsTab,
  settingsSection,
  sourceTab,
  webhooksTab,
  type OperationCall,
} from "../../web/pages/console/tabs.ts";
import { viewerOf, type Viewer } from "../pages/viewer.ts";

const Params = Type.Object({ id: Type.String({ maxLength: 100 }) });
const ItemParams = Type.Object({ id: Type.String({ maxLength: 100 }), item: Type.String({ maxLength: 200 }) });
const Toggle = Type.Object({ enabled: Type.String({ enum: ["true", "false"] }) }, { additionalProperties: false });

interface Opened {
  viewer: Viewer;
  app: AppRecord;
  role: AppRole;
}

/**
 * An app's console tabs (issue 19): overview, secrets, routines, webhooks (with deliveries) and
 * diagnostics. Pages read and forms write through the same services as the API, whose access
 * rules decide (a collaborator sees secrets refused, as over the API); a POST answers with a 303
 * back to its tab, except the one-time reveal of a webhook's secret.
 */
export default function appTabs(app: App, ctx: AppContext): void {
  /** The signed-in person and the app, when they have a relation to it; null after answering. */
  const open = async (request: FastifyRequest, id: string, reply: FastifyReply): Promise<Opened | null> => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) {
      await sendPage(reply, signInPage({ returnTo: request.url.split("?")[0] ?? "/", intro: "Sign in to see this app." }), 401);
      return null;
    }
    // To anyone without a relation to it, the app's console does not exist.
    const record = UUID.test(id) ? await ctx.apps.get(id) : null;
    const role = record === null ? null : await ctx.apps.roleOf({ kind: "user", userId: viewer.userId }, record);
    if (record === null || role === null || role === "visitor" || role === "end-user") throw apiError("not_found", "no such app among yours");
    return { viewer, app: record, role };
  };
  const page = (reply: FastifyReply, o: Opened, tab: AppTab, body: Parameters<typeof appPage>[0]["body"]) =>
    sendPage(reply, appPage({ handle: o.viewer.handle, app: o.app, tab, body }));
  const back = (reply: FastifyReply, o: Opened, tab: AppTab) => reply.redirect(tabPath(o.app.id, tab), 303);
  const user = (o: Opened) => ({ kind: "user" as const, userId: o.viewer.userId });
  const ops = (o: Opened) => Object.keys(o.app.manifest.routes);
  const summary = (tab: string) => ({ tags: ["pages"], summary: `An app's console: ${tab} (HTML)` });

  app.get("/apps/:id", { schema: { ...summary("overview"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    const body = appOverviewBody({ app: o.app, role: o.role, url: canonicalUrl(ctx.config.baseUrl, o.app) });
    return page(reply, o, "overview", [body, settingsSection(o.app, can(o.role, "manage") && o.app.ownerUserId !== null)]);
  });
  app.post(
    "/apps/:id/visibility",
    { schema: { ...summary("set visibility"), params: Params, body: Type.Object({ visibility: Type.String({ enum: [...VISIBILITIES] }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      await ctx.apps.setSettings(o.app.id, user(o), { visibility: request.body.visibility as Visibility });
      return back(reply, o, "overview");
    },
  );
  app.post(
    "/apps/:id/remixable",
    { schema: { ...summary("allow or stop copies"), params: Params, body: Type.Object({ remixable: Type.String({ enum: ["true", "false"] }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      await ctx.copies.setRemixable(o.app.id, user(o), request.body.remixable === "true");
      return back(reply, o, "overview");
    },
  );
  app.post(
    "/apps/:id/starter-prompt",
    { schema: { ...summary("set the starter prompt"), params: Params, body: Type.Object({ starter_prompt: Type.String({ maxLength: 2000 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      const text = request.body.starter_prompt.trim();
      await ctx.apps.setSettings(o.app.id, user(o), { starterPrompt: text === "" ? null : text });
      return back(reply, o, "overview");
    },
  );
  app.post(
    "/apps/:id/delete",
    { schema: { ...summary("delete the app"), params: Params, body: Type.Object({ confirm: Type.String({ maxLength: 100 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      if (request.body.confirm.trim() !== o.app.manifestId) throw apiError("invalid_request", `type ${o.app.manifestId} to confirm the deletion`);
      await ctx.apps.delete(o.app.id, user(o));
      return reply.redirect("/", 303);
    },
  );

  app.get("/apps/:id/source", { schema: { ...summary("source"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    return page(reply, o, "source", sourceTab(await ctx.apps.readSource(o.app.id, user(o))));
  });

  const operationsPage = (reply: FastifyReply, o: Opened, last: OperationCall | null) =>
    page(reply, o, "operations", operationsTab(o.app.id, visibleOperations(o.app.manifest, o.role), last));
  app.get("/apps/:id/operations", { schema: { ...summary("operations"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    return o === null ? reply : operationsPage(reply, o, null);
  });
  app.post(
    "/apps/:id/operations/:item",
    { schema: { ...summary("run an operation"), params: ItemParams, body: Type.Object({ input: Type.String({ maxLength: 16_000 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      const op = request.params.item;
      let result: unknown;
      try {
        const input = parseInput(request.body.input);
        const caller = operationCaller(user(o), o.app, o.role);
        result = { ok: true, value: await ctx.runner.call(o.app, caller, op, input, "http") };
      } catch (error) {
        // The envelope is what the person asked to see, refusals included.
        if (!(error instanceof ApiError)) throw error;
        result = error.toEnvelope();
      }
      return operationsPage(reply, o, { op, input: request.body.input, result: JSON.stringify(result, null, 2) });
    },
  );

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
    page(reply, o, "webhooks", webhooksTab(o.app.id, await ctx.webhooks.listForApp(o.viewer.userId, o.app.id), ops(o), revealed));
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
      if (!(await ctx.assets.delete(o.app.id, request.body.key))) throw apiError("not_found", `no asset ${request.body.key}`);
      return back(reply, o, "assets");
    },
  );

  app.get("/apps/:id/feedback", { schema: { ...summary("feedback"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    // Read as GET /app/{id}/feedback is: the owner only.
    await authorizeActivity({ ...user(o), via: "session" }, o.app, ctx.apps);
    return page(reply, o, "feedback", feedbackTab(await ctx.feedback.list(o.app.id)));
  });

  app.get("/apps/:id/diagnostics", { schema: { ...summary("diagnostics and activity"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    // Pages are signed in by the session cookie.
    const caller = { ...user(o), via: "session" as const };
    await authorizeDiag(caller, o.app, ctx.apps);
    await authorizeActivity(caller, o.app, ctx.apps);
    return page(reply, o, "diagnostics", diagnosticsTab(ctx.diag.list(o.app.id), await ctx.activity.list(o.app.id, { kinds: null, since: null, limit: 50 })));
  });
}

/** The operation form's JSON text as an input: empty is `{}`; anything else must parse. */
function parseInput(text: string): unknown {
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw apiError("invalid_request", "the input is not valid JSON");
  }
}
