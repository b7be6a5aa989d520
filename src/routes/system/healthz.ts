import { sql } from "kysely";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { security } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";

/** `/healthz` (liveness) and `/readyz` (readiness: also false while draining). */
export default function healthz(app: App, ctx: Services): void {
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["system"],
        summary: "Liveness: the store answers and every executor process answered",
        security: security.none,
        response: { 200: Type.Object({ ok: Type.Literal(true) }) },
      },
    },
    () => usable(ctx),
  );
  app.get(
    "/readyz",
    {
      schema: {
        tags: ["system"],
        summary: "Readiness for a load balancer: 503 while draining after SIGTERM, or while the store or the executors are not usable",
        security: security.none,
        response: { 200: Type.Object({ ok: Type.Literal(true) }) },
      },
    },
    async () => {
      if (ctx.lifecycle.draining) throw apiError("service_busy", "this instance is shutting down; send requests to another");
      return usable(ctx);
    },
  );
}

async function usable(ctx: Services): Promise<{ ok: true }> {
  try {
    await sql`select 1`.execute(ctx.db);
  } catch {
    throw apiError("service_busy", "the store is not answering");
  }
  if (!ctx.executor.healthy()) throw apiError("service_busy", "the executors are not all answering yet");
  return { ok: true as const };
}
