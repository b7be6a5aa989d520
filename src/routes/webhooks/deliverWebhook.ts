import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { DeliveryResult } from "../../domain/webhooks/delivery.ts";
import { apiError, ApiError } from "../../errors/index.ts";
import { clientNetwork } from "../../http/auth.ts";
import { rateLimitHeaders, takeOrRefuse, type BucketRule, type Decision } from "../../http/rate-limit/index.ts";
import type { App } from "../../http/types.ts";

/** Spec Limits: 300/min per address (refusals not recorded); 120/min per webhook with a valid secret. */
export const HOOK_PER_ADDRESS: BucketRule = { name: "hook:address", capacity: 300 };
export const HOOK_PER_WEBHOOK: BucketRule = { name: "hook:webhook", capacity: 120 };
// Senders such as GitHub post large events; above this Fastify answers 413 before we see them.
const DELIVERY_BODY_LIMIT = 4 * 1024 * 1024;

const addressDecisions = new WeakMap<FastifyRequest, Decision>();

export default function deliverWebhook(app: App, ctx: Services): void {
  // Scoped so the raw-body parsing below applies to this route only.
  void app.register((plugin, _options, registered) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // The body is kept as bytes: it is recorded as sent and only then checked as JSON, so a
    // malformed body is a recorded 400 rather than a parser error.
    scope.removeAllContentTypeParsers();
    const keep = (_request: FastifyRequest, body: Buffer, done: (error: null, body: Buffer) => void) => done(null, body);
    // JSON by name as well: Fastify remembers the parser it found for a named type, while every
    // request that falls through to "*" parses its Content-Type header again.
    scope.addContentTypeParser("application/json", { parseAs: "buffer", bodyLimit: DELIVERY_BODY_LIMIT }, keep);
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: DELIVERY_BODY_LIMIT }, keep);
    scope.post(
      "/api/v1/hooks/:webhookId",
      {
        schema: {
          tags: ["webhooks"],
          summary: "Deliver to a webhook: the JSON object body is the target op's input; answers the op's {ok, value}",
          security: [{ hookSecret: [] }],
          params: Type.Object({ webhookId: Type.String({ maxLength: 100 }) }),
          // Sent twice, it is refused by the handler, so the refusal is recorded (spec: delivery rule 5).
          querystring: Type.Object({ key: Type.Optional(Type.Union([Type.String({ description: "the secret, when headers cannot be set" }), Type.Array(Type.String())])) }),
          body: Type.Optional(Type.Unknown({ description: "a JSON object matching the target op's input schema" })),
          response: { 200: Type.Object({ ok: Type.Literal(true), value: Type.Unknown() }) },
        },
        // The per-address bucket is taken before the body is read; its refusals are not recorded.
        // The headers of a request it lets through are written once, by the handler.
        onRequest: async (request) => {
          addressDecisions.set(request, takeOrRefuse(ctx.limiter, request, [{ rule: HOOK_PER_ADDRESS, key: clientNetwork(request) }], { baseUrl: ctx.config.baseUrl }));
          // The body is read as bytes whatever its type says (it must be a JSON object): a
          // Content-Type Fastify cannot parse had been refused before the request was recorded.
          if (request.headers["content-type"] !== undefined) request.headers["content-type"] = "application/json";
          return Promise.resolve();
        },
      },
      async (request, reply) => {
        const limits: Limits = { address: addressDecisions.get(request), perWebhook: null };
        try {
          return await deliver(ctx, request, request.params.webhookId, request.query.key, limits);
        } finally {
          // Written once, whatever the answer; an error reply's own headers (a refusing bucket's,
          // Retry-After) replace these.
          const tightest = tighter(limits);
          if (tightest !== null) void reply.headers(rateLimitHeaders(tightest));
        }
      },
    );
    registered();
  });
}

/** The buckets a delivery took: per address before its body was read, per webhook once its secret passed. */
interface Limits {
  address: Decision | undefined;
  perWebhook: Decision | null;
}

/** The delivery rules in order (spec: Webhooks → Delivery rules); every request that gets here is recorded. */
async function deliver(ctx: Services, request: FastifyRequest, webhookId: string, key: string | string[] | undefined, limits: Limits): Promise<{ ok: true; value: unknown }> {
  const started = performance.now();
  const ts = ctx.clock.now();
  const target = await ctx.deliveries.target(webhookId);
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  let authenticated = false;
  // Resolves at once unless the delivery log is far behind the store (DeliveryLog.add); never rejects.
  const finish = (status: number, response: string, error: ApiError | null, attempted: boolean, deferred = false): Promise<void> => {
    const result: DeliveryResult = { ts, status, response, error, authenticated, attempted, deferred, durationMs: Math.round(performance.now() - started) };
    return ctx.deliveries.record(target, raw, result);
  };
  let attempted = false;
  try {
    if (Array.isArray(key)) throw apiError("invalid_request", "?key= is sent more than once; send the secret once");
    ctx.deliveries.authenticate(target, presentedSecret(request.headers.authorization, key));
    authenticated = true;
    limits.perWebhook = takeOrRefuse(ctx.limiter, request, [{ rule: HOOK_PER_WEBHOOK, key: target.row.id }], { baseUrl: ctx.config.baseUrl });
    ctx.deliveries.assertEnabled(target);
    attempted = true;
    const { value, deferred } = await ctx.deliveries.run(target, raw);
    const body = { ok: true as const, value };
    await finish(200, JSON.stringify(body), null, true, deferred);
    return body;
  } catch (error) {
    const failure = error instanceof ApiError ? error : unexpected(request, error);
    await finish(failure.status, JSON.stringify(failure.toEnvelope()), failure, attempted);
    throw failure;
  }
}

/** Bearer header first; `?key=` for senders that cannot set headers. Null when neither is sent. */
function presentedSecret(header: string | undefined, key: string | undefined): string | null {
  if (header !== undefined) return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null;
  return key ?? null;
}

/** The bucket the headers describe: whichever has fewer left. */
function tighter({ address, perWebhook }: Limits): Decision | null {
  if (address === undefined || perWebhook === null) return perWebhook ?? address ?? null;
  return perWebhook.remaining <= address.remaining ? perWebhook : address;
}

function unexpected(request: FastifyRequest, error: unknown): ApiError {
  request.log.error({ err: error, requestId: request.id }, "webhook delivery failed unexpectedly");
  return apiError("internal_error", "something went wrong on our side; it has been logged", { details: { requestId: request.id } });
}
