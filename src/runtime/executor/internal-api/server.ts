import { secretRedactor } from "../../../lib/redact.ts";
import { RateLimiter, type BucketRule } from "../../../lib/rate-limit.ts";
import { systemClock } from "../../../config/clock.ts";
import { timingSafeEqual } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { ApiError, apiError } from "../../../errors/index.ts";
import type { Invocations } from "../invocations.ts";
import type { LogSink, SecretsSource } from "./backends.ts";
import { codeBundle, type CodeCache } from "./code-cache.ts";

// Egress reports are a few hundred bytes; anything much longer is not one.
const MAX_BODY_BYTES = 64 * 1024;
// Each report reads the app's secrets (to redact the origin) and adds a diagnostics line.
const REPORTS_PER_APP: BucketRule = { name: "egress-reports:app", capacity: 20, windowMs: 10_000 };

interface Deps {
  invocations: Invocations;
  code: CodeCache;
  log: LogSink;
  secrets?: SecretsSource;
  /** Shared with the supervisor's Egress entrypoint only; lets it report refusals per app. */
  egressKey: string;
}

/**
 * The internal API: a second HTTP listener, on a unix socket in the executor's private
 * directory, that only workerd reaches. It serves what cannot ride the executor channel: code
 * for an isolate the pool did not push (named by invocation, so only the caller's own app and
 * revision), and the Egress entrypoint's refusal reports, which run in their own request.
 * Binding calls (env.KV …) go over the channel (`channel.ts`, `bindings.ts`).
 */
export class InternalApi {
  private readonly server: Server;
  /** Refusal reports kept per app: past these, dropped (the refusal itself stands either way). */
  private readonly reports = new RateLimiter(systemClock);

  constructor(
    private readonly socketPath: string,
    private readonly deps: Deps,
  ) {
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
    // An app looping over refused fetches (from background work, after its call answered) made
    // Node read its secrets once a refusal, ~850 a second: a few a second are all anyone reads.
    if (!this.reports.take([{ rule: REPORTS_PER_APP, key: body.appId }]).allowed) {
      sendJson(res, 200, { ok: true, dropped: true });
      return;
    }
    // The host may be made of a secret (https://${env.TOKEN}.example.com): cut it like any log line.
    const redact = secretRedactor((await this.deps.secrets?.forApp(body.appId)) ?? {});
    this.deps.log.emit(body.appId, { level: "error", message: redact(`capability_error: outbound fetch to ${body.origin} refused: ${body.reason}`) });
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
      const bundle = await codeBundle(this.deps.code, this.deps.secrets, invocation.appId, invocation.revision, invocation.secretsVersion);
      if (bundle === null) throw apiError("app_not_found", "no code for this app revision");
      sendJson(res, 200, bundle);
      return;
    }
    throw apiError("not_found", `no internal route ${path}`);
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw apiError("payload_too_large", `an internal request body is at most ${MAX_BODY_BYTES} bytes`);
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
