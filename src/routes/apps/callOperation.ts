import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { operationCaller } from "../../domain/operations/caller.ts";
import { apiError } from "../../errors/index.ts";
import { principalAndApp } from "../../http/auth.ts";
import { nestingError } from "../../http/json-body.ts";
import { fromToolLayer } from "../../http/tool-layer.ts";
import type { App } from "../../http/types.ts";
import { customHostOf } from "../../http/custom-hosts.ts";
import type { FastifyRequest } from "fastify";

/**
 * The store an anonymous caller's op call uses (DECISIONS §12): on the app's custom domain their
 * own, named by the pass the page gave their frame, which they must send; anywhere else the app's.
 */
function visitorOf(ctx: Services, request: FastifyRequest, appId: string): string | undefined {
  if (customHostOf(request)?.appId !== appId) return undefined;
  const pass = request.headers["x-svc-visitor"];
  const visitor = typeof pass === "string" ? ctx.visitorPasses.verify(appId, pass) : null;
  if (visitor === null) throw apiError("forbidden", "an anonymous visitor on this app's domain calls it from its page, which gives them a store of their own");
  return visitor;
}

export default function callOperation(app: App, ctx: Services): void {
  // Scoped so the lenient body parsing below applies to this route only.
  void app.register((plugin, _options, registered) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // An op may be called with no body at all (DECISIONS §4: empty body = {}); anything sent must be JSON.
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
      const text = typeof body === "string" ? body : body.toString("utf8");
      if (text.trim() === "") return done(null, undefined);
      const refused = nestingError(text);
      if (refused !== null) return done(refused, undefined);
      try {
        done(null, JSON.parse(text) as unknown);
      } catch {
        done(apiError("invalid_request", "the body is not valid JSON"), undefined);
      }
    });
    scope.post(
      "/app/:id/api/:operation",
      {
        schema: {
          tags: ["apps"],
          summary: "Run one declared operation of an app; returns {ok: true, value}",
          security: [{ appToken: [] }, { renderToken: [] }, { userToken: [] }],
          params: Type.Object({ id: Type.String(), operation: Type.String({ maxLength: 64 }) }),
          body: Type.Optional(Type.Unknown({ description: "the operation's input: a JSON object matching its declared input schema" })),
          response: { 200: Type.Object({ ok: Type.Literal(true), value: Type.Unknown() }) },
        },
      },
      async (request) => {
        const [principal, record] = await principalAndApp(ctx, request, request.params.id);
        // Shares are rows of their own: looked up only for people, never for app tokens.
        const signedIn = principal?.kind === "user" || (principal?.kind === "render" && principal.userId !== null);
        const caller = operationCaller(principal, record, signedIn ? await ctx.apps.roleOf(principal, record) : null);
        const visitor = !signedIn && principal?.kind !== "app" ? visitorOf(ctx, request, record.id) : undefined;
        const value = await ctx.runner.call(record, { ...caller, ...(visitor === undefined ? {} : { visitor }) }, request.params.operation, request.body, fromToolLayer(request) ? "agent" : "http", request.id);
        return { ok: true as const, value };
      },
    );
    registered();
  });
}
