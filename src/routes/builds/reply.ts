import type { FastifyReply, FastifyRequest } from "fastify";
import type { AppContext } from "../../context.ts";
import type { Actor } from "../../domain/apps/access.ts";
import type { BuildDeferred } from "../../domain/apps/build-seam.ts";
import type { BuildStatus } from "../../domain/builds/status.ts";

/** The N of `Prefer: wait=N`, or 0 when the client asked not to wait. */
export function preferredWait(request: FastifyRequest): number {
  const header = request.headers["prefer"];
  const match = /(?:^|[,;\s])wait\s*=\s*(\d{1,4})(?:$|[,;\s])/i.exec(typeof header === "string" ? header : "");
  return match?.[1] === undefined ? 0 : Number(match[1]);
}

/** The status of a build, waited for as `Prefer: wait=N` asks. */
export function currentStatus(ctx: AppContext, request: FastifyRequest, buildId: string, actor: Actor): Promise<BuildStatus> {
  const wait = preferredWait(request);
  return wait > 0 ? ctx.builds.waitFor(buildId, actor, wait) : ctx.builds.status(buildId, actor);
}

/**
 * A write answered with its build: 202, the status (with the new app's token for an anonymous
 * create, this once) and `Location` pointing at where to poll it.
 */
export async function replyDeferred(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, deferred: BuildDeferred, actor: Actor) {
  // The writer reads its own build: an anonymous creator through the token it is given now.
  const reader: Actor = actor ?? (deferred.token === null ? null : { kind: "app", appId: deferred.appId });
  const status = await currentStatus(ctx, request, deferred.buildId, reader);
  void reply.header("Location", status.statusUrl);
  if (status.retryAfterSeconds !== undefined) void reply.header("Retry-After", String(status.retryAfterSeconds));
  return reply.status(202).send({ ...status, ...(deferred.token === null ? {} : { token: deferred.token }) });
}
