import type { KvWrite } from "../../storage/index.ts";
import { apiError, ApiError, recovery } from "../../../errors/index.ts";
import { nestsDeeperThan } from "../../../lib/json-depth.ts";
import { secretRedactor } from "../../../lib/redact.ts";
import type { Invocation, Invocations } from "../invocations.ts";
import type { Capability } from "../types.ts";
import type { LogSink, SecretsSource, StorageBackend } from "./backends.ts";
import type { VisitorKv, VisitorStore } from "../../storage/visitor-kv.ts";

/** One value plus framing; a longer payload is refused before any storage work. */
export const MAX_BINDING_PAYLOAD = 10 * 1024 * 1024 + 64 * 1024;
/** One `env.LOG.emit` line, message and data: more than the diagnostics (2,000 characters) and the call's log (16 KB) keep. */
export const LOG_LINE_MAX_BYTES = 64 * 1024;

/** A binding call as it arrives over the executor channel from the app's session. */
export interface BindingCall {
  /** The invocation id the app was handed; the only thing that names whose data is touched. */
  invocation: string;
  /** The app the calling isolate belongs to, as the supervisor knows it (a second check). */
  appId: string;
  path: string;
  key?: string;
  contentType?: string;
  payload: Buffer;
  /** `/kv/commit`: the writes an op made without waiting (write-behind); undefined if malformed. */
  writes?: KvWrite[];
}

export interface BindingReply {
  status: number;
  contentType: string;
  body: Buffer | string;
  /** On KV reads when the read cache is on: the write count seen before reading. */
  epoch?: number;
}

export interface BindingDeps {
  invocations: Invocations;
  storage: StorageBackend;
  log: LogSink;
  secrets?: SecretsSource;
  /** Present when workerd caches KV reads (see Executor): committed KV writes so far. */
  kvEpoch?: () => number;
  /** Visitors' own stores on custom domains: where an invocation made for a visitor reads and writes. */
  visitors?: VisitorKv;
}

type Handler = (inv: Invocation, call: BindingCall) => Promise<BindingReply>;

interface Route {
  cap: Capability;
  write: boolean;
  handler: Handler;
}

const json = (body: unknown, status = 200): BindingReply => ({ status, contentType: "application/json", body: JSON.stringify(body) });

/**
 * env.KV, env.BLOB and env.LOG on the Node side. Every call names an invocation; the app,
 * revision and access level come from that record, never from the call. Never throws: a
 * refusal is an error envelope with the kind's status, which the shim turns into a throw.
 */
export class BindingHandler {
  private readonly routes: Record<string, Route | undefined>;

  constructor(private readonly deps: BindingDeps) {
    this.routes = buildRoutes(deps);
  }

  async handle(call: BindingCall): Promise<BindingReply> {
    const invocation = this.deps.invocations.get(call.invocation);
    try {
      if (invocation?.appId !== call.appId) throw apiError("forbidden", "unknown or finished invocation");
      return await this.run(invocation, call);
    } catch (thrown) {
      const error = thrown instanceof ApiError ? thrown : apiError("capability_error", "the storage backend failed");
      // Remember the first refusal: if the op then fails, the caller sees this, not a generic
      // throw; and a write-behind commit that fails fails the op (see ExecutorChannel.run).
      if (invocation !== undefined && invocation.refusal === null && invocation.appId === call.appId) invocation.refusal = error;
      return json(error.toEnvelope(), error.status);
    }
  }

  private async run(invocation: Invocation, call: BindingCall): Promise<BindingReply> {
    const route = Object.hasOwn(this.routes, call.path) ? this.routes[call.path] : undefined;
    if (route === undefined) throw apiError("not_found", `no binding ${call.path}`);
    if (!invocation.caps.has(route.cap)) throw apiError("capability_denied", `this app does not import the ${route.cap} capability`);
    if (route.write && invocation.access === "read") {
      throw apiError("forbidden_write", `operation "${invocation.op}" is declared access: "read" and may not write to storage`, {
        recovery: recovery.fixRouteLabel(invocation.op),
      });
    }
    const length = call.payload.length;
    if (length > MAX_BINDING_PAYLOAD) {
      throw apiError("stored_value_too_large", `the value is about ${length} bytes; one stored value is at most 10485760`, {
        recovery: recovery.shrink("payload", length, 10 * 1024 * 1024),
      });
    }
    return route.handler(invocation, call);
  }
}

function buildRoutes(deps: BindingDeps): Record<string, Route> {
  const { storage, log } = deps;
  // A call made for a visitor of a custom domain touches that visitor's store and nothing of the app's.
  const visitorOf = (inv: Invocation): VisitorStore | null => {
    if (inv.visitor === undefined) return null;
    if (deps.visitors === undefined) throw apiError("capability_error", "visitor stores are not available here");
    return { appId: inv.appId, visitorId: inv.visitor };
  };
  const appStoreOnly = (inv: Invocation): void => {
    if (inv.visitor !== undefined) throw apiError("capability_denied", "blob storage belongs to the app's owner; a visitor's own store on a custom domain holds KV values only");
  };
  // One secrets read per invocation, however many lines it logs.
  const redactors = new WeakMap<Invocation, Promise<(text: string) => string>>();
  const redactorOf = (inv: Invocation) => {
    let pending = redactors.get(inv);
    if (pending === undefined) {
      pending = (deps.secrets?.forApp(inv.appId) ?? Promise.resolve({})).then(secretRedactor);
      redactors.set(inv, pending);
    }
    return pending;
  };
  const body = (call: BindingCall): Record<string, unknown> => {
    if (nestsDeeperThan(call.payload)) throw apiError("invalid_request", "the binding sent a body nested too deep");
    try {
      const parsed: unknown = JSON.parse(call.payload.toString("utf8") || "{}");
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw apiError("invalid_request", "the binding sent a malformed body");
  };
  // After a write: at least its own epoch, so the writer's isolate cache drops what it had.
  const withEpoch = (reply: BindingReply): BindingReply => {
    const epoch = deps.kvEpoch?.();
    return epoch === undefined ? reply : { ...reply, epoch };
  };
  const listOptions = (b: Record<string, unknown>) => ({
    prefix: b.prefix as string | undefined,
    limit: b.limit as number | undefined,
    cursor: b.cursor as string | null | undefined,
  });
  return {
    "/kv/get": {
      cap: "kv",
      write: false,
      handler: async (inv, call) => {
        // Sampled before the read: a write that commits after it carries a higher epoch.
        const epoch = deps.kvEpoch?.();
        const visitor = visitorOf(inv);
        if (visitor !== null) {
          // No epoch: the call's private cache keeps nothing it read (a read racing its own write could go stale).
          return { status: 200, contentType: "application/json", body: (await deps.visitors?.get(visitor, call.key ?? "")) ?? "" };
        }
        const value = await storage.kvGet(inv.appId, call.key ?? "");
        return { status: 200, contentType: "application/json", body: value ?? "", ...(epoch === undefined ? {} : { epoch }) };
      },
    },
    "/kv/set": {
      cap: "kv",
      write: true,
      handler: async (inv, call) => {
        const visitor = visitorOf(inv);
        if (visitor === null) await storage.kvSet(inv.appId, call.key ?? "", call.payload.toString("utf8"), inv.lease);
        else await deps.visitors?.commit(visitor, [{ key: call.key ?? "", value: call.payload.toString("utf8") }]);
        return withEpoch(json({ ok: true }));
      },
    },
    "/kv/commit": {
      cap: "kv",
      write: true,
      handler: async (inv, call) => {
        if (call.writes === undefined) throw apiError("invalid_request", "the binding sent malformed writes");
        const visitor = visitorOf(inv);
        if (visitor === null) await storage.kvCommit(inv.appId, call.writes, inv.lease);
        else await deps.visitors?.commit(visitor, call.writes);
        return withEpoch(json({ ok: true }));
      },
    },
    "/kv/delete": {
      cap: "kv",
      write: true,
      handler: async (inv, call) => {
        const visitor = visitorOf(inv);
        const key = body(call).key as string;
        return withEpoch(json({ deleted: visitor === null ? await storage.kvDelete(inv.appId, key) : await deps.visitors?.delete(visitor, key) }));
      },
    },
    "/kv/list": {
      cap: "kv",
      write: false,
      handler: async (inv, call) => {
        const visitor = visitorOf(inv);
        return json(visitor === null ? await storage.kvList(inv.appId, listOptions(body(call))) : await deps.visitors?.list(visitor, listOptions(body(call))));
      },
    },
    "/blob/put": {
      cap: "blob",
      write: true,
      handler: async (inv, call) => {
        appStoreOnly(inv);
        await storage.blobPut(inv.appId, call.key ?? "", call.payload, call.contentType ?? "application/octet-stream", inv.lease);
        return json({ ok: true });
      },
    },
    "/blob/get": {
      cap: "blob",
      write: false,
      handler: async (inv, call) => {
        appStoreOnly(inv);
        const blob = await storage.blobGet(inv.appId, body(call).key as string);
        return blob === null ? { status: 204, contentType: "", body: "" } : { status: 200, contentType: blob.contentType, body: blob.data };
      },
    },
    "/blob/delete": {
      cap: "blob",
      write: true,
      handler: async (inv, call) => {
        appStoreOnly(inv);
        return json({ deleted: await storage.blobDelete(inv.appId, body(call).key as string) });
      },
    },
    "/blob/list": {
      cap: "blob",
      write: false,
      handler: async (inv, call) => {
        appStoreOnly(inv);
        return json(await storage.blobList(inv.appId, listOptions(body(call))));
      },
    },
    "/log/emit": {
      cap: "log",
      write: false,
      handler: async (inv, call) => {
        // Refused before it is parsed, redacted and serialized, all of which Node did in full for
        // a line of up to 10 MiB, to keep 2,000 characters of it (73 ms of its one thread at 8 MiB).
        if (call.payload.length > LOG_LINE_MAX_BYTES) throw apiError("invalid_request", `a log line (message and data) is at most ${LOG_LINE_MAX_BYTES} bytes; log less`);
        const b = body(call);
        // Diag is readable by more than the app; an app logging its own secret must not publish it.
        const redact = await redactorOf(inv);
        const data = b.data === undefined ? undefined : redactData(redact, b.data);
        log.emit(inv.appId, { level: text(b.level, "info"), message: redact(text(b.message, "")), data });
        // And into the app's log ring with the call's console lines, under the call's caps.
        await inv.log?.emit(b.level, text(b.message, ""), b.data);
        return json({ ok: true });
      },
    },
  };
}

function text(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : value === undefined ? fallback : JSON.stringify(value);
}

/**
 * Log data with secrets cut from its JSON text. The redactor cuts whole escaped forms, so the
 * text stays JSON; should it not, the data is kept as redacted text rather than dropped.
 */
function redactData(redact: (text: string) => string, data: unknown): unknown {
  const text = redact(JSON.stringify(data) ?? "null");
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
