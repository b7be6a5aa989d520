import type { RouteSpec } from "./executor/types.ts";

/**
 * What the runtime needs from the services above it, as narrow interfaces: the composition root
 * hands it the domain's diagnostics, code and secrets, and the runtime never imports them.
 */

/** The in-memory diag ring an app's owner reads (a failed op's message and stack). */
export interface DiagSink {
  pushError(appId: string, message: string, stack: string): void;
}

/** Durable runtime-failure events (`GET /app/{id}/activity`). */
export interface ActivitySink {
  record(appId: string, kind: "api_proxy_result" | "contract_validation", revision: number, summary: string, data: Record<string, unknown>): Promise<unknown>;
}

/** Op calls and failures per app, for the console's chart. */
export interface CallCountSink {
  count(appId: string, failed: boolean): void;
}

/** Each op call's outcome (`ok`, or the error kind it answered), for the metrics. */
export interface OpCallSink {
  opCall(outcome: string): void;
}

/** The manifest fields the runtime reads of an app's active revision. */
export interface RuntimeManifest {
  routes: Record<string, RouteSpec>;
  capabilities: { imports: readonly string[]; origins: readonly string[] };
}
