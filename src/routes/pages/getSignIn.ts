import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { sameOriginPath } from "../../web/html.ts";
import { sendPage } from "../../web/layout.ts";
import { signInPage } from "../../web/pages/common.ts";

export default function getSignIn(app: App, _ctx: Services): void {
  app.get(
    "/sign-in",
    {
      schema: {
        tags: ["pages"],
        summary: "Sign-in page (HTML); returns to `return_to`, a path on this site, afterwards",
        querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 2048 })) }),
      },
    },
    async (request, reply) => sendPage(reply, signInPage({ returnTo: sameOriginPath(request.query.return_to, "/pair") })),
  );
}
