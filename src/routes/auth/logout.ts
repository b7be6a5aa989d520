import type { Services } from "../../services.ts";
import { clearSessionCookie, principalOf, sessionCookieName } from "../../http/auth.ts";
import { OkOnly, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { ApiError } from "../../errors/index.ts";

export default function logout(app: App, ctx: Services): void {
  app.post(
    "/api/auth/logout",
    {
      schema: { tags: ["accounts"], summary: "End the current session at once", security: security.sessionOnly, response: { 200: OkOnly } },
    },
    async (request, reply) => {
      const cookie = request.cookies[sessionCookieName(ctx.config.baseUrl)];
      if (cookie !== undefined && cookie !== "") {
        // Resolving first applies the Origin rule: a cross-site page cannot sign a person out. A
        // suspended person's session is refused there, yet they may still end it, from our pages.
        const principal = await principalOf(ctx, request).catch((error: unknown) => {
          if (error instanceof ApiError && error.kind === "unauthorized" && request.headers.origin === new URL(ctx.config.baseUrl).origin) return "refused" as const;
          throw error;
        });
        if (principal === "refused" || (principal?.kind === "user" && principal.via === "session")) await ctx.sessions.end(cookie);
      }
      clearSessionCookie(ctx, reply);
      return { ok: true as const };
    },
  );
}
