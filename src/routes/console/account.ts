import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { enforceRateLimit } from "../../http/rate-limit/index.ts";
import type { App } from "../../http/types.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { VERIFY_RESEND_PER_USER } from "../auth/limits.ts";
import { sendPage } from "../../web/layout.ts";
import { signInPage } from "../../web/pages/common.ts";
import { accountPage } from "../../web/pages/console/account.ts";
import { viewerAudit, viewerOf, type Viewer } from "../pages/viewer.ts";

/** A token minted here lasts as long as one from POST /api/token by default. */
const TOKEN_DAYS = 7;

/** `/account` (issue 19): plan, user tokens (mint with the plaintext shown once, revoke), connected OAuth clients (revoke). */
export default function accountPages(app: App, ctx: Services): void {
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<Viewer | null> => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) await sendPage(reply, signInPage({ returnTo: "/account", intro: "Sign in to see your account." }), 401);
    return viewer;
  };
  const render = async (reply: FastifyReply, viewer: Viewer, minted: string | null) => {
    const user = await ctx.users.byId(viewer.userId);
    const tokens = await ctx.tokens.listUserTokens(viewer.userId);
    const plan = user?.plan ?? "free";
    // The same counts the routine and webhook limits are checked against.
    const usage = { limits: PLAN_LIMITS[plan], routines: (await ctx.routines.listForUser(viewer.userId)).limits.used, webhooks: (await ctx.webhooks.listForUser(viewer.userId)).limits.used };
    const teams = await ctx.teams.mine(viewer.userId);
    const clients = await ctx.oauth.grants.list(viewer.userId);
    return sendPage(reply, accountPage({ handle: viewer.handle, email: user?.email ?? "", plan, usage, teams, tokens, clients, minted }));
  };

  app.get("/account", { schema: { tags: ["pages"], summary: "Your account: plan and user tokens (HTML)" } }, async (request, reply) => {
    const viewer = await signedIn(request, reply);
    return viewer === null ? reply : render(reply, viewer, null);
  });
  app.post(
    "/account/tokens",
    { schema: { tags: ["pages"], summary: "Mint a user token; its plaintext is in this answer only", body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 80 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const viewer = await signedIn(request, reply);
      if (viewer === null) return reply;
      const issued = await ctx.tokens.mintUserToken(viewer.userId, { name: request.body.name, days: TOKEN_DAYS }, viewerAudit(request, viewer));
      return render(reply, viewer, issued.token);
    },
  );
  app.post("/account/verify-email", { schema: { tags: ["pages"], summary: "Send the email verification link again, then back to /" } }, async (request, reply) => {
    const viewer = await signedIn(request, reply);
    if (viewer === null) return reply;
    // The JSON resend's bucket: a second door is not a second allowance.
    enforceRateLimit(ctx.limiter, request, reply, [{ rule: VERIFY_RESEND_PER_USER, key: viewer.userId }], { baseUrl: ctx.config.baseUrl });
    const user = await ctx.users.byId(viewer.userId);
    if (user !== null && !user.emailVerified) await ctx.emailVerification.start(user);
    return reply.redirect("/", 303);
  });
  app.post(
    "/account/teams",
    { schema: { tags: ["pages"], summary: "Create a team (it owns apps as an account does)", body: Type.Object({ slug: Type.String({ minLength: 1, maxLength: 39 }) }, { additionalProperties: false }) } },
    async (request, reply) => {
      const viewer = await signedIn(request, reply);
      if (viewer === null) return reply;
      await ctx.teams.create(viewer.userId, { slug: request.body.slug.trim() });
      return reply.redirect("/account", 303);
    },
  );
  app.post(
    "/account/tokens/:id/revoke",
    { schema: { tags: ["pages"], summary: "Revoke one of your user tokens", params: Type.Object({ id: Type.String({ maxLength: 100 }) }) } },
    async (request, reply) => {
      const viewer = await signedIn(request, reply);
      if (viewer === null) return reply;
      await ctx.tokens.revokeUserToken(viewer.userId, request.params.id, viewerAudit(request, viewer));
      return reply.redirect("/account", 303);
    },
  );
  // An OAuth client's grant (DECISIONS §17): its codes, access and refresh tokens end with it.
  app.post(
    "/account/clients/:id/revoke",
    { schema: { tags: ["pages"], summary: "Revoke a connected OAuth client", params: Type.Object({ id: Type.String({ maxLength: 100 }) }) } },
    async (request, reply) => {
      const viewer = await signedIn(request, reply);
      if (viewer === null) return reply;
      await ctx.oauth.grants.revoke(viewer.userId, request.params.id, viewerAudit(request, viewer));
      return reply.redirect("/account", 303);
    },
  );
}
