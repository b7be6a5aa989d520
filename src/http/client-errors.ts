import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply } from "fastify";
import { apiError, type ApiError } from "../errors/index.ts";
import { sendError } from "./error-handler.ts";

/**
 * Requests that fail before Fastify has a route for them still answer in the spec's envelope:
 * a path that cannot be decoded or a parameter past its length (the router's `frameworkErrors`),
 * and what Node's HTTP parser refuses outright (`clientErrorHandler`): headers too large, a NUL
 * or other invalid byte in a header, two Content-Length headers; and an `Expect` other than
 * `100-continue` (`expectationFailed`). None echoes the request: a path or header may carry a
 * credential.
 */
export function frameworkError(error: FastifyError, _request: unknown, reply: FastifyReply): void {
  const failure =
    error.code === "FST_ERR_MAX_PARAM_LENGTH"
      ? apiError("invalid_request", "a path segment is longer than this service accepts", {}, { status: 414 })
      : apiError("invalid_request", "the request path is not validly percent-encoded");
  void sendError(reply, failure);
}

export function clientError(error: Error & { code?: string }, socket: Socket): void {
  // The client went away, or the socket is unusable: there is no one to answer.
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const failure = parserFailure(error.code);
  const body = JSON.stringify(failure.toEnvelope());
  socket.end(
    `HTTP/1.1 ${failure.status} ${failure.status === 431 ? "Request Header Fields Too Large" : failure.status === 408 ? "Request Timeout" : "Bad Request"}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Connection: close\r\n\r\n" +
      body,
  );
}

/**
 * Node's `checkExpectation`: a request whose `Expect` this server cannot meet never reaches a
 * route, and Node's own answer is an empty 417. The connection closes, since a client that sends
 * its body anyway would have it read as the next request.
 */
export function expectationFailed(_request: IncomingMessage, response: ServerResponse): void {
  const failure = apiError("invalid_request", "the request's Expect header asks for something other than 100-continue", {}, { status: 417 });
  const body = JSON.stringify(failure.toEnvelope());
  response.writeHead(417, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" });
  response.end(body);
}

function parserFailure(code: string | undefined): ApiError {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return apiError("invalid_request", "the request's headers are larger than this service accepts", {}, { status: 431 });
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return apiError("invalid_request", "the request was not received in time", {}, { status: 408 });
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return apiError("invalid_request", "the request has more than one Content-Length, or one beside Transfer-Encoding");
    case "HPE_INVALID_HEADER_TOKEN":
    case "HPE_INVALID_CONSTANT":
      return apiError("invalid_request", "a request header holds a byte HTTP does not allow");
    default:
      return apiError("invalid_request", "the request is not valid HTTP");
  }
}
