import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { html } from "../../web/html.ts";
import { layout, sendPage } from "../../web/layout.ts";

export default function verifyEmail(app: App, ctx: Services): void {
  app.get(
    "/verify-email",
    {
      schema: {
        tags: ["pages"],
        summary: "The emailed verification link (HTML): confirms the account's address, once",
        querystring: Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) }),
      },
    },
    async (request, reply) => {
      const { email } = await ctx.emailVerification.verify(request.query.token);
      return sendPage(
        reply,
        layout({
          title: "Email confirmed",
          body: html`<h1>Email confirmed</h1>
<p role="status"><span class="label">${email}</span> is confirmed as yours. Invitations sent to it are waiting among your incoming shares.</p>`,
        }),
      );
    },
  );
}
