import { requirePermission } from "../../domain/access/access.ts";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError, ApiError } from "../../errors/index.ts";
import { customHostOf, publicOrigin } from "../../http/custom-hosts.ts";
import type { App } from "../../http/types.ts";
import { frameCsp, framePage } from "../../web/frame.ts";
import { newNonce } from "../../web/layout.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { refuseSuspended } from "../../domain/apps/suspended.ts";

export default function getFrame(app: App, ctx: Services): void {
  app.get(
    "/app/:id/frame",
    {
      schema: {
        tags: ["web"],
        summary: "The app's frame document (HTML): #app, styles, the client SDK and the app's ui under a nonce-based CSP",
        security: [{ queryRenderToken: [] }],
        params: AppIdParams,
        querystring: Type.Object({
          t: Type.String({ description: "query render token minted by the shell" }),
          v: Type.Optional(Type.String({ maxLength: 200, description: "on a custom domain: the anonymous visitor's pass, for their own store" })),
        }),
      },
    },
    async (request, reply) => {
      const record = await ctx.apps.find(request.params.id);
      const holder = await ctx.tokens.authenticate(request.query.t).catch((error: unknown) => {
        // An expired or unknown link: the shell mints a fresh one on reload.
        if (error instanceof ApiError) throw apiError("unauthorized", "this frame link is no longer valid; reload the app's page");
        throw error;
      });
      if (holder.kind !== "render" || holder.appId !== record.id) throw apiError("forbidden", "this token does not open this app");
      // Only while the person who opened the page may still open it (a share revoked, a team left).
      requirePermission(await ctx.apps.roleOf(holder, record), record, "view");
      refuseSuspended(record);
      const code = await ctx.apps.codeAt(record.id, record.revision);
      if (code === null) throw new Error(`app ${record.id} has no source for revision ${record.revision}`);
      const sdkToken = await ctx.renderTokens.mintFrame(record.id, holder.userId);
      const nonce = newNonce();
      // The frame's calls go to the origin it was served from: the app's custom domain, or ours.
      const origin = publicOrigin(request, ctx.config.baseUrl);
      // The visitor's pass rides on only on the app's own domain, and only when it is this app's.
      const pass = request.query.v;
      const visitor = pass !== undefined && customHostOf(request)?.appId === record.id && ctx.visitorPasses.verify(record.id, pass) !== null ? pass : null;
      const page = framePage({
        base: origin,
        visitor,
        appId: record.id,
        title: record.displayName,
        manifest: code.manifest,
        ui: code.ui,
        styles: code.styles,
        nonce,
        token: sdkToken.token,
        tokenExpiresAt: sdkToken.expiresAt ?? 0,
      });
      return reply
        .headers({
          "Content-Security-Policy": frameCsp(origin, record.id, nonce, request.query.t, code.ui),
          "X-Content-Type-Options": "nosniff",
          // The URL carries a token: never send it on as a Referer.
          "Referrer-Policy": "no-referrer",
          "Cache-Control": "no-store",
        })
        .type("text/html; charset=utf-8")
        .send(page);
    },
  );
}
