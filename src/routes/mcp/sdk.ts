import type * as McpSdk from "@modelcontextprotocol/server";
import type { McpHttpHandler } from "@modelcontextprotocol/server";

/**
 * The MCP SDK, imported on the first MCP request rather than at start: with the schema library it
 * brings, it was ~200 ms of a process's ~3.5 s start (measured alone, cold), for endpoints that
 * agents, not every instance or every test server, call.
 */
export type Sdk = typeof McpSdk;

let sdk: Promise<Sdk> | undefined;

export function loadSdk(): Promise<Sdk> {
  return (sdk ??= import("@modelcontextprotocol/server"));
}

/** The handler `build` makes, built on the first request that needs it. */
export function lazyHandler(build: (sdk: Sdk) => McpHttpHandler): () => Promise<McpHttpHandler> {
  let handler: Promise<McpHttpHandler> | undefined;
  return () => (handler ??= loadSdk().then(build));
}
