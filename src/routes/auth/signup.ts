import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { clientNetwork, setSessionCookie } from "../../http/auth.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { SIGNUP_PER_IP } from "./limits.ts";
import { UserView, userView } from "./schemas.ts";

export default function signup(app: App, ctx: Services): void {
  app.post(
    "/api/auth/signup",
    {
      schema: {
        tags: ["accounts"],
        summary: "Create an account and start a session",
        security: security.none,
        body: Type.Object(
          {
            email: Type.String({ minLength: 3, maxLength: 254 }),
            handle: Type.String({ minLength: 1, maxLength: 64 }),
            password: Type.String({ minLength: 1, maxLength: 1024 }),
          },
          { additionalProperties: false },
        ),
        response: { 201: ok({ user: UserView }) },
      },
      preHandler: async (request, reply) => {
        enforceRateLimit(ctx.limiter, request, reply, [{ rule: SIGNUP_PER_IP, key: clientNetwork(request) }], { baseUrl: ctx.config.baseUrl });
      },
    },
    async (request, reply) => {
      if (ctx.config.signup === "closed") throw apiError("forbidden", "sign-up is closed on this server; ask its operator for an account");
      const user = await ctx.users.create(request.body);
      await ctx.emailVerification.start(user);
      setSessionCookie(ctx, reply, await ctx.sessions.create(user.id));
      return reply.status(201).send({ ok: true, user: userView(user) });
    },
  );
}
