import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { ApiError } from "../../errors/index.ts";
import type { App } from "../../http/types.ts";
import { sendPage } from "../../web/layout.ts";
import { confirmPage, enterCodePage, pairSignInPage } from "../../web/pages/pair.ts";
import { lockedOut } from "../pair/lockout.ts";
import { viewerOf } from "./viewer.ts";

export default function getPairPage(app: App, ctx: Services): void {
  app.get(
    "/pair",
    {
      schema: {
        tags: ["pages"],
        summary: "Device-pairing approval page (HTML): sign in, compare the code, approve or deny",
        querystring: Type.Object({ code: Type.Optional(Type.String({ maxLength: 64 })) }),
      },
    },
    async (request, reply) => {
      const code = request.query.code?.trim() ?? "";
      const viewer = await viewerOf(ctx, request);
      if (viewer === null) return sendPage(reply, pairSignInPage(code === "" ? "/pair" : `/pair?code=${encodeURIComponent(code)}`));
      if (code === "") return sendPage(reply, enterCodePage({ handle: viewer.handle }));

      let found;
      try {
        // A looked-up code counts like an approval attempt: wrong ones feed the lock-out.
        found = await ctx.pairings.lookup(viewer.userId, code);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return sendPage(reply, enterCodePage({ handle: viewer.handle, code, error: error.message }), error.status);
      }
      if (found.status === "locked") throw lockedOut(found.lock, request, ctx.config.baseUrl);
      // Showing the code is not approving it: the person still has to press a button.
      return sendPage(reply, confirmPage({ handle: viewer.handle, pairing: found.pairing }));
    },
  );
}
