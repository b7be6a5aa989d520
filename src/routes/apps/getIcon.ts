import type { Services } from "../../services.ts";
import { iconSvg } from "../../domain/source/icon.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "./schemas.ts";

export default function getIcon(app: App, ctx: Services): void {
  app.get(
    "/app/:id/icon.svg",
    {
      schema: {
        tags: ["apps"],
        summary: "The app's icon: its emoji on a rounded square of its colour (the brick by default)",
        security: security.none,
        params: AppIdParams,
      },
    },
    async (request, reply) => {
      // Public like a favicon: it shows one emoji and a colour, and the UUID is unguessable.
      const found = await ctx.apps.find(request.params.id);
      return reply
        .type("image/svg+xml; charset=utf-8")
        .header("Cache-Control", "public, max-age=300")
        .header("X-Content-Type-Options", "nosniff")
        .send(iconSvg(found.icon));
    },
  );
}
