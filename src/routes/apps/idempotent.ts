import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../../services.ts";
import type { StoredResponse } from "../../domain/idempotency/idempotency.ts";
import { apiError } from "../../errors/index.ts";
import { clientIp, type Principal } from "../../http/auth.ts";

/** The shortest Idempotency-Key an anonymous caller may send (a UUID has 36 characters). */
const ANONYMOUS_KEY_MIN = 16;

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
  // Anonymous callers are told apart by address, which many share behind one NAT, and an
  // anonymous create's replay carries its app's token: the key is what keeps that answer its
  // sender's, so it must be one no one else would pick ("create-1" was).
  if (actor === null && key.length < ANONYMOUS_KEY_MIN) {
    throw apiError("invalid_request", `an Idempotency-Key sent without a token must be at least ${ANONYMOUS_KEY_MIN} characters: its replay carries the app's token to whoever sends it again, so use a random one (a UUID)`);
  }
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
