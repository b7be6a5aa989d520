import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { can } from "../../domain/access/access.ts";
import { SUSPENDED_MESSAGE } from "../../domain/apps/suspended.ts";
import { hostKey } from "../../domain/domains/index.ts";
import { apiError } from "../../errors/index.ts";
import { pagePrincipalOf } from "../../http/auth.ts";
import { openOnDomainPath } from "../../http/custom-hosts.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { errorPage, onTheWayPage } from "../../web/pages/common.ts";

/**
 * A person's way onto a private app's custom domain (DECISIONS §12). Their session is the main
 * host's cookie, which the domain never sees, and sign-in is not served there: the domain's page
 * links here, this signs them in on the main host if need be, and sends them back to the domain
 * with a query render token (about a day, as every page's), which the page takes as it does on
 * the main host. Only to a domain the app is served at, and only for those who may open it.
 */
export default function openOnDomain(app: App, ctx: Services): void {
  app.get(
    "/app/:appId/open-on-domain",
    {
      schema: {
        tags: ["pages"],
        summary: "Signs a person in on the main host and sends them to the app's custom domain with a render token (HTML redirects)",
        params: Type.Object({ appId: Type.String({ maxLength: 100 }) }),
        querystring: Type.Object({ host: Type.String({ minLength: 1, maxLength: 300 }), state: Type.Optional(Type.String({ maxLength: 64, pattern: "^[A-Za-z0-9_-]+$" })) }),
      },
    },
    async (request, reply) => {
      const missing = apiError("app_not_found", "There is no app here, or it is not shared with you.");
      const host = hostKey(request.query.host);
      // Never to a host the app is not served at: that would hand its token to anyone.
      const served = host === null ? null : ctx.domainHosts.appAt(host);
      // Null too for an app deleted since the host map was read.
      const record = served !== request.params.appId ? null : await ctx.apps.get(served);
      if (record === null || host === null) return sendPage(reply, errorPage(missing), 404);
      const principal = await pagePrincipalOf(ctx, request);
      // A person, by their session (or user token); any other credential is no one here.
      const person = principal?.kind === "user" ? principal : null;
      if (!can(await ctx.apps.roleOf(person, record), "view")) {
        if (principal !== null) return sendPage(reply, errorPage(missing), 404);
        return reply.redirect(`/sign-in?return_to=${encodeURIComponent(openOnDomainPath(record.id, host, request.query.state))}`, 303);
      }
      if (record.suspension !== null) return sendPage(reply, errorPage(apiError("forbidden", `This app has been ${SUSPENDED_MESSAGE}.`)), 403);
      const origin = domainOrigin(ctx.config.baseUrl, host);
      // Anyone may open it (a public app): the domain serves them as a visitor, with no token.
      if (person === null) return reply.redirect(`${origin}/`, 303);
      // A domain whose record has gone missing may be someone else's by now.
      if (!(await ctx.domains.verifiedFor(record.id, host))) return sendPage(reply, errorPage(missing), 404);
      const token = (await ctx.renderTokens.mintQuery(record.id, person.userId)).token;
      // A page, not a redirect: arriving from the sign-in form, a redirect to another origin
      // is the form's, and the sign-in page's form-action (its own origin) would stop it.
      // The state goes back as it came: the domain keeps the token only for the browser that asked.
      const state = request.query.state === undefined ? "" : `&state=${encodeURIComponent(request.query.state)}`;
      return sendPage(reply, onTheWayPage({ title: `Opening ${record.displayName}`, to: `${origin}/?t=${encodeURIComponent(token)}${state}`, where: host }));
    },
  );
}

/**
 * The domain's origin as its visitors use it: the service's scheme and port, as the operator's
 * proxy serves domains beside the main host (DECISIONS §12; README "Custom domains"). Never from
 * the request, so a link cannot send the token over plain http where the service is on https.
 */
function domainOrigin(baseUrl: string, host: string): string {
  const base = new URL(baseUrl);
  return `${base.protocol}//${host}${base.port === "" ? "" : `:${base.port}`}`;
}
