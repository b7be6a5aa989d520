import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import { can, VISIBILITIES, type Visibility } from "../../domain/access/access.ts";
import { iso } from "../../config/clock.ts";
import { visibleOperations } from "../../domain/access/operations-view.ts";
import { operationCaller } from "../../domain/operations/caller.ts";
import { nestingError } from "../../http/json-body.ts";
import type { App } from "../../http/types.ts";
import { appOverviewBody } from "../../web/pages/console/front.ts";
import { versionsTab, operationsTab, settingsSection, sourceTab, type OperationCall, storageMeter } from "../../web/pages/console/tabs.ts";
import { APP_CAP_BYTES } from "../../runtime/index.ts";
import { consoleKit, ItemParams, Params, type Opened } from "./opened.ts";
import { viewerAudit } from "../pages/viewer.ts";

/**
 * An app's console (issue 19): overview and settings, source, versions and operations. Pages
 * read and forms write through the same services as the API, whose access rules decide; a POST
 * answers with a 303 back to its tab.
 */
export default function appTabs(app: App, ctx: Services): void {
  const { open, page, back, user, summary } = consoleKit(ctx);
  app.get("/apps/:id", { schema: { ...summary("overview"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    const body = appOverviewBody({ app: o.app, role: o.role, url: canonicalUrl(ctx.config.baseUrl, o.app) });
    const storage = storageMeter(await ctx.storage.usage(o.app.id), APP_CAP_BYTES);
    return page(reply, o, "overview", [body, storage, settingsSection(o.app, can(o.role, "manage") && o.app.ownerUserId !== null)]);
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
      await ctx.apps.delete(o.app.id, user(o), viewerAudit(request, o.viewer));
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
        result = { ok: true, value: await ctx.runner.call(o.app, caller, op, input, "http", request.id) };
      } catch (error) {
        // The envelope is what the person asked to see, refusals included.
        if (!(error instanceof ApiError)) throw error;
        result = error.toEnvelope();
      }
      return operationsPage(reply, o, { op, input: request.body.input, result: JSON.stringify(result, null, 2) });
    },
  );

  app.get("/apps/:id/versions", { schema: { ...summary("versions"), params: Params } }, async (request, reply) => {
    const o = await open(request, request.params.id, reply);
    if (o === null) return reply;
    const versions = (await ctx.versions.list(o.app.id, user(o))).map((v) => ({ ...v, createdAt: iso(v.createdAt) }));
    return page(reply, o, "versions", versionsTab(o.app.id, o.app.revision, versions, can(o.role, "source:write")));
  });
  app.post(
    "/apps/:id/versions/:item/restore",
    { schema: { ...summary("restore a version"), params: ItemParams, body: Type.Object({ expected: Type.String({ pattern: "^[0-9]{1,15}$" }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const o = await open(request, request.params.id, reply);
      if (o === null) return reply;
      // The revision the page showed: a write since then makes this a 412, not a silent overwrite.
      const restored = await ctx.versions.restore(o.app.id, request.params.item, user(o), { expectedRevision: Number(request.body.expected) });
      if ("deferred" in restored) return reply.redirect(`/builds/${restored.deferred.buildId}`, 303);
      return back(reply, o, "versions");
    },
  );

}

/** The operation form's JSON text as an input: empty is `{}`; anything else must parse. */
function parseInput(text: string): unknown {
  if (text.trim() === "") return {};
  // As deep as the API takes it (json-depth.ts), whichever door the input comes through.
  const refused = nestingError(text, "the input");
  if (refused !== null) throw refused;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw apiError("invalid_request", "the input is not valid JSON");
  }
}
