import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the proxy could not complete, and on which backend. */
export interface ProxyFailure {
  backend: string | null;
  method: string;
  path: string;
  /** What the client got: 502 after the backend failed mid-request, 503 when none was ready. */
  status: number;
  reason: string;
}

export interface RoundRobinProxy {
  /** The one public origin (the instances' BASE_URL). */
  readonly url: string;
  /** Every request the proxy answered with its own error, in order. */
  readonly failures: ProxyFailure[];
  /** How many requests each backend answered. */
  readonly served: Map<string, number>;
  /** Resolves once the backend's readiness is `ready` as the proxy's health checks see it. */
  until(backend: string, ready: boolean): Promise<void>;
  close(): Promise<void>;
}

const CHECK_EVERY_MS = 100;
/** Hop-by-hop headers (RFC 9110 §7.6.1) and the length of a body re-framed here. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"]);

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

/**
 * A small load balancer as an operator would configure one: round robin over the backends its
 * health checks (`GET /readyz` every 100 ms) find ready; a request whose connection is refused
 * goes to the next backend (nothing was sent, so retrying is safe); one that fails after it was
 * sent is answered 502 and recorded. Request bodies are buffered, responses streamed (event
 * streams pass through); upstream connections are not reused, as nginx does by default, so a
 * draining backend never has an idle connection to close under a request.
 */
export async function startRoundRobinProxy(backends: string[]): Promise<RoundRobinProxy> {
  const ready = new Set<string>();
  const waiters: Array<{ backend: string; ready: boolean; resolve: () => void }> = [];
  const failures: ProxyFailure[] = [];
  const served = new Map<string, number>();
  let next = 0;
  let closed = false;

  const setReady = (backend: string, isReady: boolean) => {
    if (isReady) ready.add(backend);
    else ready.delete(backend);
    for (const waiter of waiters.filter((w) => w.backend === backend && w.ready === isReady)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  const check = async (backend: string) => {
    while (!closed) {
      const ok = await fetch(`${backend}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
        (res) => {
          void res.body?.cancel();
          return res.status === 200;
        },
        () => false,
      );
      setReady(backend, ok);
      await new Promise((resolve) => setTimeout(resolve, CHECK_EVERY_MS));
    }
  };

  /** Sends the request to `backend`; "refused" when no connection could be made. */
  const forward = (backend: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<"done" | "refused"> =>
    new Promise((resolve) => {
      const forwardedFor = [req.headers["x-forwarded-for"], req.socket.remoteAddress].filter(Boolean).join(", ");
      const upstream = request(`${backend}${req.url ?? "/"}`, {
        method: req.method,
        headers: { ...endToEnd(req.headers), "x-forwarded-for": forwardedFor, "content-length": String(body.length), connection: "close" },
        agent: false,
      });
      let clientGone = false;
      res.on("close", () => {
        // The client hung up (an event stream it closed): not a failure of the backend.
        if (res.writableFinished) return;
        clientGone = true;
        upstream.destroy();
      });
      const fail = (status: number, reason: string) => failures.push({ backend, method: req.method ?? "", path: req.url ?? "", status, reason });
      upstream.on("response", (answer) => {
        served.set(backend, (served.get(backend) ?? 0) + 1);
        res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
        answer.pipe(res);
        answer.on("close", () => {
          if (!answer.complete && !clientGone) {
            fail(answer.statusCode ?? 0, "response cut off");
            res.destroy();
          }
          resolve("done");
        });
      });
      upstream.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "ECONNREFUSED") return resolve("refused");
        if (clientGone) return resolve("done");
        if (res.headersSent) {
          res.destroy();
        } else {
          fail(502, error.code ?? error.message);
          res.writeHead(502, { "content-type": "application/json" }).end(JSON.stringify({ ok: false, error: { kind: "bad_gateway", message: `backend ${backend}: ${error.message}` } }));
        }
        resolve("done");
      });
      upstream.end(body);
    });

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const candidates = [...ready];
        for (let attempt = 0; attempt < candidates.length; attempt++) {
          const backend = candidates[next++ % candidates.length];
          if (backend === undefined) break;
          if ((await forward(backend, req, body, res)) === "done") return;
        }
        failures.push({ backend: null, method: req.method ?? "", path: req.url ?? "", status: 503, reason: "no backend ready" });
        res.writeHead(503, { "content-type": "application/json", "retry-after": "1" }).end(JSON.stringify({ ok: false, error: { kind: "service_busy", message: "no backend is ready" } }));
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  for (const backend of backends) void check(backend);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failures,
    served,
    until(backend, isReady) {
      if (ready.has(backend) === isReady) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ backend, ready: isReady, resolve }));
    },
    async close() {
      closed = true;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
