import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import type { Actor } from "../../domain/access/access.ts";
import type { BuildDeferred } from "../../domain/apps/build-seam.ts";
import type { BuildStatus } from "../../domain/builds/status.ts";

/** The N of `Prefer: wait=N`, or 0 when the client asked not to wait. */
export function preferredWait(request: FastifyRequest): number {
  const header = request.headers["prefer"];
  const match = /(?:^|[,;\s])wait\s*=\s*(\d{1,4})(?:$|[,;\s])/i.exec(typeof header === "string" ? header : "");
  return match?.[1] === undefined ? 0 : Number(match[1]);
}

/** The status of a build, waited for as `Prefer: wait=N` asks. */
export function currentStatus(ctx: Services, request: FastifyRequest, buildId: string, actor: Actor): Promise<BuildStatus> {
  const wait = preferredWait(request);
  return wait > 0 ? ctx.builds.waitFor(buildId, actor, wait) : ctx.builds.status(buildId, actor);
}

/**
 * A write answered with its build: 202, the status (with the new app's token for an anonymous
 * create, this once) and `Location` pointing at where to poll it.
 */
export async function deferredResponse(ctx: Services, request: FastifyRequest, deferred: BuildDeferred, actor: Actor) {
  const key = request.headers["idempotency-key"];
  if (typeof key === "string") await ctx.builds.noteIdempotencyKey(deferred.buildId, key);
  // The writer reads its own build: an anonymous creator through the token it is given now.
  const reader: Actor = actor ?? (deferred.token === null ? null : { kind: "app", appId: deferred.appId });
  const status = await currentStatus(ctx, request, deferred.buildId, reader);
  return {
    status: 202,
    body: { ...status, ...(deferred.token === null ? {} : { token: deferred.token }) },
    etag: null,
    headers: { location: status.statusUrl, ...(status.retryAfterSeconds === undefined ? {} : { "retry-after": String(status.retryAfterSeconds) }) },
  };
}

/** As deferredResponse, sent. */
export async function replyDeferred(ctx: Services, request: FastifyRequest, reply: FastifyReply, deferred: BuildDeferred, actor: Actor) {
  const response = await deferredResponse(ctx, request, deferred, actor);
  for (const [name, value] of Object.entries(response.headers)) void reply.header(name, value);
  return reply.status(202).send(response.body);
}
