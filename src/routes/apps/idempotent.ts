import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import type { StoredResponse } from "../../domain/idempotency/idempotency.ts";
import { clientIp, type Principal } from "../../http/auth.ts";

/**
 * Answers a write once per Idempotency-Key (when the request sends one): `write` runs for the
 * first request with a key, and its response is replayed to repeats with the same body.
 */
export async function idempotent(
  ctx: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  actor: Principal | null,
  write: () => Promise<StoredResponse & { headers?: Record<string, string> }>,
) {
  const header = request.headers["idempotency-key"];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) return send(reply, await write());
  // Anonymous callers are told apart by address: an anonymous create's answer carries its token.
  const scope = actor === null ? `ip:${clientIp(request)}` : actor.kind === "user" ? `user:${actor.userId}` : `${actor.kind}:${actor.appId}`;
  const claim = await ctx.idempotency.claim(scope, `${request.method} ${request.url.split("?")[0] ?? ""}`, key, request.body);
  if ("replay" in claim) return send(reply, claim.replay);
  try {
    const response = await write();
    await claim.pending.complete(response);
    return send(reply, response);
  } catch (error) {
    await claim.pending.abandon();
    throw error;
  }
}

function send(reply: FastifyReply, response: StoredResponse & { headers?: Record<string, string> }) {
  if (response.etag !== null) void reply.header("ETag", response.etag);
  for (const [name, value] of Object.entries(response.headers ?? {})) void reply.header(name, value);
  return reply.status(response.status).send(response.body);
}
