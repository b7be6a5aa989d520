import type { FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import { principalOf } from "../../http/auth.ts";

export interface Viewer {
  userId: string;
  handle: string;
}

/** The signed-in person looking at a page, or null: pages offer sign-in instead of a 401. */
export async function viewerOf(ctx: Services, request: FastifyRequest): Promise<Viewer | null> {
  const principal = await principalOf(ctx, request);
  if (principal?.kind !== "user") return null;
  const user = await ctx.users.byId(principal.userId);
  return user === null ? null : { userId: user.id, handle: user.handle };
}
