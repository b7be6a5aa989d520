import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, apiError, recovery } from "../errors/index.ts";
import type { App } from "./types.ts";

/**
 * The one place errors become responses: every failure, ours or Fastify's, leaves as the spec's
 * envelope. Anything we did not anticipate is a 500 that names only the request id.
 */
export function installErrorHandler(app: App): void {
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const failure = toApiError(error, request);
    if (failure.status >= 500 && !(error instanceof ApiError)) {
      request.log.error({ err: error, requestId: request.id }, "unexpected error");
    }
    return sendError(reply, failure);
  });
}

export function sendError(reply: FastifyReply, failure: ApiError): FastifyReply {
  void reply.status(failure.status).headers(failure.headers);
  if (failure.closeConnection) void reply.header("Connection", "close");
  return reply.type("application/json; charset=utf-8").send(failure.toEnvelope());
}

export function toApiError(error: FastifyError | ApiError, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (error.validation !== undefined) return apiError("invalid_request", validationMessage(error));
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return bodyTooLarge(request, request.routeOptions.bodyLimit ?? 0);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return apiError("invalid_request", `unsupported Content-Type ${request.headers["content-type"] ?? "(none)"}; send application/json`);
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return apiError("invalid_request", "the body is empty; send a JSON object");
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    // Fastify's own client errors: malformed JSON, bad URL encoding, bad content length.
    return apiError("invalid_request", error.message);
  }
  return apiError("internal_error", "something went wrong on our side; it has been logged", { details: { requestId: request.id } });
}

/**
 * A body past `cap`, the limit that refused it. Its size is the one declared; a body sent in
 * chunks declares none and was cut off once past the cap, so only that much is known of it.
 */
export function bodyTooLarge(request: FastifyRequest, cap: number): ApiError {
  const declared = Number(request.headers["content-length"]);
  const known = Number.isSafeInteger(declared) && declared > cap;
  return apiError("payload_too_large", `the request body is ${known ? `${declared} bytes, ` : ""}larger than this route's ${cap}-byte cap`, {
    recovery: recovery.shrink("payload", known ? declared : cap + 1, cap, { atLeast: !known }),
  });
}

/** "body/label must NOT have more than 80 characters", naming the offending path. */
function validationMessage(error: FastifyError): string {
  const first = error.validation?.[0];
  if (first === undefined) return error.message;
  const where = `${error.validationContext ?? "body"}${first.instancePath}`;
  const params = first.params;
  if (typeof params.additionalProperty === "string") return `${where}/${params.additionalProperty} is not an allowed property`;
  if (typeof params.missingProperty === "string") return `${where}/${params.missingProperty} is required`;
  return `${where} ${first.message ?? "is invalid"}`;
}
