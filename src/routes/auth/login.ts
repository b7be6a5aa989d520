import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { clientNetwork, setSessionCookie } from "../../http/auth.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import { ok, security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { LOGIN_PER_ACCOUNT, LOGIN_PER_IP } from "./limits.ts";
import { UserView, userView } from "./schemas.ts";

const LoginBody = Type.Object(
  {
    login: Type.String({ minLength: 1, maxLength: 254, description: "email or handle" }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

export default function login(app: App, ctx: Services): void {
  app.post(
    "/api/auth/login",
    {
      schema: {
        tags: ["accounts"],
        summary: "Sign in with email or handle and password; sets a new session cookie",
        security: security.none,
        body: LoginBody,
        response: { 200: ok({ user: UserView }) },
      },
      preHandler: async (request, reply) => {
        const body = request.body as { login: string };
        enforceRateLimit(
          ctx.limiter,
          request,
          reply,
          [
            { rule: LOGIN_PER_IP, key: clientNetwork(request) },
            { rule: LOGIN_PER_ACCOUNT, key: await ctx.users.loginKey(body.login) },
          ],
          { baseUrl: ctx.config.baseUrl },
        );
      },
    },
    async (request, reply) => {
      const user = await ctx.users.authenticate(request.body.login, request.body.password);
      if (user === null) throw apiError("unauthorized", "wrong login or password");
      setSessionCookie(ctx, reply, await ctx.sessions.create(user.id));
      return { ok: true as const, user: userView(user) };
    },
  );
}
