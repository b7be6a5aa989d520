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

/** DECISIONS §18: `console.log` is `info`, `console.debug` and `console.trace` are `debug`. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** One line an app's code wrote during an op call, secrets already cut from it. */
export interface LogLine {
  /** Epoch milliseconds, as the app's isolate saw the clock (it moves between I/O only). */
  time: number;
  level: LogLevel;
  op: string;
  /** The request that asked for the call (X-Request-Id); null for routines and other callers without one. */
  requestId: string | null;
  message: string;
}

/** Where an app's log lines go (the log ring the owner and agents read; domain/logs). */
export interface LogLineSink {
  write(appId: string, lines: readonly LogLine[]): void;
}
