import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { requireUser } from "../../http/auth.ts";
import { NullableTimestamp, Timestamp, ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { auditContext } from "../../http/audit.ts";

export default function createToken(app: App, ctx: Services): void {
  app.post(
    "/api/token",
    {
      schema: {
        tags: ["tokens"],
        summary: "Mint a user token (plaintext returned once)",
        security: security.user,
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 80 })),
            expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: ok({
            id: Type.String({ format: "uuid" }),
            token: Type.String(),
            name: Type.Union([Type.String(), Type.Null()]),
            createdAt: Timestamp,
            expiresAt: NullableTimestamp,
          }),
        },
      },
    },
    async (request, reply) => {
      const principal = await requireUser(ctx, request);
      const name = request.body.name ?? null;
      const issued = await ctx.tokens.mintUserToken(principal.userId, { name, days: request.body.expires_in_days ?? 7 }, auditContext(request, principal));
      return reply.status(201).send({
        ok: true,
        id: issued.id,
        token: issued.token,
        name,
        createdAt: iso(issued.createdAt),
        expiresAt: issued.expiresAt === null ? null : iso(issued.expiresAt),
      });
    },
  );
}
