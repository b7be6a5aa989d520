import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { TokenRecord } from "./schemas.ts";

export default function listTokens(app: App, ctx: Services): void {
  app.get(
    "/api/token",
    {
      schema: {
        tags: ["tokens"],
        summary: "List the caller's live user tokens (never their plaintext)",
        security: security.user,
        response: { 200: ok({ tokens: Type.Array(TokenRecord) }) },
      },
    },
    async (request) => {
      const principal = await requireUser(ctx, request);
      const tokens = await ctx.tokens.listUserTokens(principal.userId);
      return {
        ok: true as const,
        tokens: tokens.map((t) => ({
          ...t,
          createdAt: iso(t.createdAt),
          expiresAt: t.expiresAt === null ? null : iso(t.expiresAt),
          lastUsedAt: t.lastUsedAt === null ? null : iso(t.lastUsedAt),
        })),
      };
    },
  );
}
