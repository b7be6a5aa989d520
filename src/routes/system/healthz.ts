import { sql } from "kysely";
import { Type } from "typebox";
import type { AppContext } from "../../context.ts";
import { apiError } from "../../errors/index.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";

export default function healthz(app: App, ctx: AppContext): void {
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["system"],
        summary: "Liveness: the store answers (and, once executors exist, every executor answered)",
        security: security.none,
        response: { 200: Type.Object({ ok: Type.Literal(true) }) },
      },
    },
    async () => {
      try {
        await sql`select 1`.execute(ctx.db);
      } catch {
        throw apiError("service_busy", "the store is not answering");
      }
      return { ok: true as const };
    },
  );
}
