import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ApiError, apiError } from "../../errors/index.ts";
import { clearSessionCookie, clientNetwork, principalOf, sessionCookieName, setSessionCookie } from "../../http/auth.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import type { App } from "../../http/types.ts";
import { sameOriginPath } from "../../web/html.ts";
import { sendPage } from "../../web/layout.ts";
import { dashboardPage, landingPage, signUpPage } from "../../web/pages/console/front.ts";
import { SIGNUP_PER_IP } from "../auth/limits.ts";
import { viewerOf } from "../pages/viewer.ts";

const PAGE_SIZE = 25;

const SignUpForm = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    handle: Type.String({ minLength: 1, maxLength: 64 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

/**
 * The console's front door (issue 19): `/` (landing, or the dashboard once signed in), sign-up
 * and sign-out as forms, and an app's overview. Each calls the same services as the API.
 */
export default function consolePages(app: App, ctx: Services): void {
  app.get(
    "/",
    {
      schema: {
        tags: ["pages"],
        summary: "The front door: what Brickyard is, or your apps once signed in (HTML)",
        querystring: Type.Object({ q: Type.Optional(Type.String({ maxLength: 100 })), cursor: Type.Optional(Type.String({ maxLength: 200 })) }),
      },
    },
    async (request, reply) => {
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) return sendPage(reply, landingPage({ signupOpen: ctx.config.signup === "open" }));
      const search = (request.query.q ?? "").trim();
      const { rows, nextCursor } = await ctx.apps.list(viewer.userId, PAGE_SIZE, request.query.cursor ?? null, search === "" ? null : search);
      const user = await ctx.users.byId(viewer.userId);
      const lastCalled = await ctx.callCounts.lastCalled(rows.map((r) => r.app.id));
      return sendPage(reply, dashboardPage({ handle: viewer.handle, rows, lastCalled, search, nextCursor, verified: user?.emailVerified ?? true }));
    },
  );

  app.get(
    "/sign-up",
    { schema: { tags: ["pages"], summary: "Create an account (HTML form)", querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 2048 })) }) } },
    (request, reply) => {
      if (ctx.config.signup !== "open") throw apiError("forbidden", "sign-up is closed on this server; ask its operator for an account");
      return sendPage(reply, signUpPage({ returnTo: sameOriginPath(request.query.return_to, "/") }));
    },
  );

  app.post(
    "/sign-up",
    {
      schema: { tags: ["pages"], summary: "Sign-up form handler: creates the account, signs in, redirects (303)", consumes: ["application/x-www-form-urlencoded"], body: SignUpForm },
      // The JSON sign-up's bucket: a second door is not a second allowance.
      preHandler: async (request, reply) => {
        enforceRateLimit(ctx.limiter, request, reply, [{ rule: SIGNUP_PER_IP, key: clientNetwork(request) }], { baseUrl: ctx.config.baseUrl });
      },
    },
    async (request, reply) => {
      if (ctx.config.signup !== "open") throw apiError("forbidden", "sign-up is closed on this server; ask its operator for an account");
      const { email, handle, password } = request.body;
      const returnTo = sameOriginPath(request.body.return_to, "/");
      let user;
      try {
        user = await ctx.users.create({ email, handle, password });
      } catch (error) {
        // A refusal the person can fix is shown on the form, with what they typed (never the password).
        if (!(error instanceof ApiError) || error.status >= 500) throw error;
        return sendPage(reply, signUpPage({ email, handle, returnTo, error: error.message }), error.status);
      }
      await ctx.emailVerification.start(user);
      setSessionCookie(ctx, reply, await ctx.sessions.create(user.id));
      return reply.redirect(returnTo, 303);
    },
  );

  app.post("/sign-out", { schema: { tags: ["pages"], summary: "Sign out: ends this browser's session and goes to / (303)" } }, async (request, reply) => {
    const cookie = request.cookies[sessionCookieName(ctx.config.baseUrl)];
    if (cookie !== undefined && cookie !== "") {
      // A suspended person's session is refused, yet they may end it (the page scope checked the Origin).
      const principal = await principalOf(ctx, request).catch((error: unknown) => {
        if (error instanceof ApiError && error.kind === "unauthorized") return "refused" as const;
        throw error;
      });
      if (principal === "refused" || (principal?.kind === "user" && principal.via === "session")) await ctx.sessions.end(cookie);
    }
    clearSessionCookie(ctx, reply);
    return reply.redirect("/", 303);
  });
}
