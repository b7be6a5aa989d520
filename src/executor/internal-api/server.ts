import { timingSafeEqual } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { ApiError, apiError, recovery } from "../../errors/index.ts";
import type { Invocation, Invocations } from "../invocations.ts";
import type { Capability } from "../types.ts";
import { secretRedactor } from "../../domain/secrets/redact.ts";
import type { LogSink, SecretsSource, StorageBackend } from "./backends.ts";
import { codeBundle, type CodeCache } from "./code-cache.ts";

// A body can be one 10 MiB value plus framing; anything longer is refused before it is read.
const MAX_BODY_BYTES = 10 * 1024 * 1024 + 64 * 1024;

interface Deps {
  invocations: Invocations;
  code: CodeCache;
  storage: StorageBackend;
  log: LogSink;
  secrets?: SecretsSource;
  /** Shared with the supervisor's Egress entrypoint only; lets it report refusals per app. */
  egressKey: string;
}

type Handler = (inv: Invocation, body: Buffer, req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * The internal API: a second HTTP listener, on a unix socket in the executor's private
 * directory, that only workerd reaches. Every call names an invocation; the app, revision and
 * access level come from that record, never from the request.
 */
export class InternalApi {
  private readonly server: Server;
  private readonly routes: Record<string, { cap: Capability | null; write: boolean; handler: Handler }>;

  constructor(
    private readonly socketPath: string,
    private readonly deps: Deps,
  ) {
    this.routes = buildRoutes(deps);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => sendError(res, error));
    });
    this.server.keepAliveTimeout = 60_000;
  }

  async listen(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.socketPath, () => resolve());
    });
    chmodSync(this.socketPath, 0o600);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /**
   * The Egress entrypoint refused an app's outbound fetch: a `capability_error` diag entry that
   * names the origin and the reason (never a path or query, which may carry credentials).
   */
  private async egressRefused(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = req.headers["x-by-egress-key"];
    if (typeof key !== "string" || !safeEqual(key, this.deps.egressKey)) throw apiError("forbidden", "not the egress entrypoint");
    const body = JSON.parse((await readBody(req)).toString("utf8")) as { appId?: unknown; origin?: unknown; reason?: unknown };
    if (typeof body.appId !== "string" || typeof body.origin !== "string" || typeof body.reason !== "string") {
      throw apiError("invalid_request", "appId, origin and reason are required");
    }
    this.deps.log.emit(body.appId, { level: "error", message: `capability_error: outbound fetch to ${body.origin} refused: ${body.reason}` });
    sendJson(res, 200, { ok: true });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.url === "/egress/refused") return this.egressRefused(req, res);
    const header = req.headers["x-svc-invocation"];
    const invocation = this.deps.invocations.get(typeof header === "string" ? header : undefined);
    if (invocation === undefined) throw apiError("forbidden", "unknown or finished invocation");
    const path = (req.url ?? "").split("?")[0] ?? "";
    if (path === "/code") {
      // `vars` become env strings in the isolate (secrets, issue 5).
      const bundle = await codeBundle(this.deps.code, this.deps.secrets, invocation.appId, invocation.revision);
      if (bundle === null) throw apiError("app_not_found", "no code for this app revision");
      sendJson(res, 200, bundle);
      return;
    }
    const route = this.routes[path];
    if (route === undefined) throw apiError("not_found", `no internal route ${path}`);
    try {
      if (route.cap !== null && !invocation.caps.has(route.cap)) {
        throw apiError("capability_denied", `this app does not import the ${route.cap} capability`);
      }
      if (route.write && invocation.access === "read") {
        throw apiError("forbidden_write", `operation "${invocation.op}" is declared access: "read" and may not write to storage`, {
          recovery: recovery.fixRouteLabel(invocation.op),
        });
      }
      const length = Number(req.headers["content-length"] ?? 0);
      if (length > MAX_BODY_BYTES) throw apiError("stored_value_too_large", `the value is about ${length} bytes; one stored value is at most 10485760`, {
        recovery: recovery.shrink("payload", length, 10 * 1024 * 1024),
      });
      await route.handler(invocation, await readBody(req), req, res);
    } catch (error) {
      // Remember the first refusal: if the op then fails, the caller sees this, not a generic throw.
      if (error instanceof ApiError && invocation.refusal === null) invocation.refusal = error;
      throw error;
    }
  }
}

function buildRoutes(deps: Deps): InternalApi["routes"] {
  const { storage, log } = deps;
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
  const jsonBody = (body: Buffer): Record<string, unknown> => {
    try {
      const parsed: unknown = JSON.parse(body.toString("utf8") || "{}");
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw apiError("invalid_request", "the binding sent a malformed body");
  };
  const keyHeader = (req: IncomingMessage): string => decodeURIComponent(String(req.headers["x-by-key"] ?? ""));
  const listOptions = (b: Record<string, unknown>) => ({
    prefix: b.prefix as string | undefined,
    limit: b.limit as number | undefined,
    cursor: b.cursor as string | null | undefined,
  });
  return {
    "/kv/get": {
      cap: "kv",
      write: false,
      handler: async (inv, body, _req, res) => {
        const value = await storage.kvGet(inv.appId, jsonBody(body).key as string);
        res.writeHead(200, { "content-type": "application/json" }).end(value ?? "");
      },
    },
    "/kv/set": {
      cap: "kv",
      write: true,
      handler: async (inv, body, req, res) => {
        await storage.kvSet(inv.appId, keyHeader(req), body.toString("utf8"));
        sendJson(res, 200, { ok: true });
      },
    },
    "/kv/delete": {
      cap: "kv",
      write: true,
      handler: async (inv, body, _req, res) => sendJson(res, 200, { deleted: await storage.kvDelete(inv.appId, jsonBody(body).key as string) }),
    },
    "/kv/list": {
      cap: "kv",
      write: false,
      handler: async (inv, body, _req, res) => sendJson(res, 200, await storage.kvList(inv.appId, listOptions(jsonBody(body)))),
    },
    "/blob/put": {
      cap: "blob",
      write: true,
      handler: async (inv, body, req, res) => {
        await storage.blobPut(inv.appId, keyHeader(req), body, String(req.headers["content-type"] ?? "application/octet-stream"));
        sendJson(res, 200, { ok: true });
      },
    },
    "/blob/get": {
      cap: "blob",
      write: false,
      handler: async (inv, body, _req, res) => {
        const blob = await storage.blobGet(inv.appId, jsonBody(body).key as string);
        if (blob === null) res.writeHead(204).end();
        else res.writeHead(200, { "content-type": blob.contentType }).end(blob.data);
      },
    },
    "/blob/delete": {
      cap: "blob",
      write: true,
      handler: async (inv, body, _req, res) => sendJson(res, 200, { deleted: await storage.blobDelete(inv.appId, jsonBody(body).key as string) }),
    },
    "/blob/list": {
      cap: "blob",
      write: false,
      handler: async (inv, body, _req, res) => sendJson(res, 200, await storage.blobList(inv.appId, listOptions(jsonBody(body)))),
    },
    "/log/emit": {
      cap: "log",
      write: false,
      handler: async (inv, body, _req, res) => {
        const b = jsonBody(body);
        // Diag is readable by more than the app; an app logging its own secret must not publish it.
        const redact = await redactorOf(inv);
        const data = b.data === undefined ? undefined : (JSON.parse(redact(JSON.stringify(b.data))) as unknown);
        log.emit(inv.appId, { level: text(b.level, "info"), message: redact(text(b.message, "")), data });
        sendJson(res, 200, { ok: true });
      },
    },
  };
}

function text(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : value === undefined ? fallback : JSON.stringify(value);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw apiError("stored_value_too_large", "the value is larger than 10485760 bytes");
    chunks.push(buf);
  }
  return chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

function sendError(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof ApiError) {
    sendJson(res, error.status, error.toEnvelope());
    return;
  }
  sendJson(res, 502, { ok: false, error: { kind: "capability_error", message: "the storage backend failed" } });
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
