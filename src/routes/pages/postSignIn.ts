import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { clientNetwork, setSessionCookie } from "../../http/auth.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import type { App } from "../../http/types.ts";
import { sameOriginPath } from "../../web/html.ts";
import { sendPage } from "../../web/layout.ts";
import { signInPage } from "../../web/pages/common.ts";
import { LOGIN_PER_ACCOUNT, LOGIN_PER_IP } from "../auth/limits.ts";

const SignInForm = Type.Object(
  {
    login: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

/** The form twin of POST /api/auth/login: signs in, then 303s back to the page that asked. */
export default function postSignIn(app: App, ctx: Services): void {
  app.post(
    "/sign-in",
    {
      schema: {
        tags: ["pages"],
        summary: "Sign-in form handler: sets the session cookie and redirects (303) to `return_to`",
        consumes: ["application/x-www-form-urlencoded"],
        body: SignInForm,
      },
      preHandler: async (request, reply) => {
        // The same buckets as the JSON login, so a second door is not a second set of guesses.
        enforceRateLimit(
          ctx.limiter,
          request,
          reply,
          [
            { rule: LOGIN_PER_IP, key: clientNetwork(request) },
            { rule: LOGIN_PER_ACCOUNT, key: await ctx.users.loginKey(request.body.login) },
          ],
          { baseUrl: ctx.config.baseUrl },
        );
      },
    },
    async (request, reply) => {
      const returnTo = sameOriginPath(request.body.return_to, "/pair");
      const user = await ctx.users.authenticate(request.body.login, request.body.password);
      if (user === null) {
        return sendPage(reply, signInPage({ returnTo, login: request.body.login, error: "Wrong login or password." }), 401);
      }
      setSessionCookie(ctx, reply, await ctx.sessions.create(user.id));
      return reply.redirect(returnTo, 303);
    },
  );
}
