import type { FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import { apiError } from "../../errors/index.ts";
import { principalOf, shareKey, type AuthDeps } from "../auth.ts";
import type { App } from "../types.ts";
import { NotAdmitted, PrincipalLanes } from "./lanes.ts";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Writes that keep to their own lanes: each is metered already, or runs an app's code for as
 * long as the op takes (a lane held for the length of an op would stall its caller's edits).
 * Every other write is the unmetered control plane's and goes through the caller's lane.
 */
export const UNGATED_WRITES: ReadonlySet<string> = new Set([
  // Op calls: the app's run ceilings meter them (and an agent's, from the tool layer, waits for a slot).
  "POST /app/:id/api/:operation",
  "POST /api/v1/routines/:id/run",
  "POST /apps/:id/routines/:item/run",
  // Webhook deliveries: per address and per webhook buckets.
  "POST /api/v1/hooks/:webhookId",
  // The MCP transport: its tool calls come back in through the routes they name, gated there.
  "POST /mcp",
  "DELETE /mcp",
  "POST /app/:id/mcp",
  "DELETE /app/:id/mcp",
  // Rate-limited by the spec's table, or throttled per app (assets).
  "POST /api/pair/start",
  "POST /api/pair/poll",
  "POST /api/pair/approve",
  "POST /app/:id/diag/report",
  "POST /app/:id/load-error/report",
  "POST /app/:id/feedback",
  "POST /app/:id/render-token",
  "POST /app/:id/assets",
  "DELETE /app/:id/assets/*",
]);

/**
 * Writes metered for anonymous callers only (per address): theirs keep to that meter, which is
 * taken before the body is read; a signed-in caller's go through the user's lane.
 */
export const METERED_WHEN_ANONYMOUS: ReadonlySet<string> = new Set(["POST /app"]);

/**
 * Reads whose answers can be large (an app's source, its UI in the frame, a manifest's schemas:
 * each up to 256 KiB; the OpenAPI document) and are not metered (spec: app reads are not). One client reading such an
 * answer from 8 connections held Node's thread ~80 % of the time (a neighbour's op calls kept
 * 0.18–0.21 of their rate alone), so these take their caller's lane as unmetered writes do.
 * HEAD of each goes with its GET.
 */
export const GATED_READS: ReadonlySet<string> = new Set([
  "GET /app/:id/source",
  "GET /app/:id/versions/:revision",
  "GET /app/:id/frame",
  "GET /app/:id/describe",
  "GET /app/:id/agent.json",
  "GET /apps/:id/source",
  "GET /api/v1/webhooks/:id/deliveries",
  // ~200 KiB, the same for everyone: serialized once, but its writes alone kept a neighbour to 0.27.
  "GET /.well-known/openapi.json",
]);

export interface FairShare {
  lanes: PrincipalLanes;
  /** Entries of the lists above no route matched: a typo would ungate nothing, or gate nothing. */
  unmatched: () => string[];
}

/**
 * Puts every unmetered write, and the large reads, through its principal's lane (lanes.ts): a
 * signed-in user's requests share one lane whichever token or session they carry; anything else
 * (anonymous, an app's own token, a credential the route will refuse) shares its client
 * address's. The lane is taken before the body is read, so waiting requests cost the body's parse
 * nothing until their turn.
 */
export function installFairShare(app: App, ctx: AuthDeps, lanes = new PrincipalLanes()): FairShare {
  const matched = new Set<string>();
  /** `gated`: the route's methods that take a lane; `anonymousMetered`: those an anonymous caller skips. */
  const gate = (gated: ReadonlySet<string>, anonymousMetered: ReadonlySet<string>): onRequestAsyncHookHandler =>
    async function fairShare(request, reply) {
      if (!gated.has(request.method)) return;
      const lane = await laneOf(ctx, request);
      if (lane.anonymous && anonymousMetered.has(request.method)) return;
      const ticket = lanes.enter(lane.key);
      // 'close' comes once the answer is sent or the client has gone, whichever is first.
      reply.raw.once("close", ticket.leave);
      try {
        await ticket.admitted;
      } catch (error) {
        if (error instanceof NotAdmitted) throw apiError("service_busy", error.message);
        throw error;
      }
    };
  app.addHook("onRoute", (route) => {
    const listed = (set: ReadonlySet<string>, method: string) => {
      const found = set.has(`${method} ${route.url}`);
      if (found) matched.add(`${method} ${route.url}`);
      return found;
    };
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const writes = methods.filter((method) => WRITES.has(method) && !listed(UNGATED_WRITES, method));
    const reads = methods.filter((method) => (method === "GET" || method === "HEAD") && listed(GATED_READS, "GET"));
    const gated = new Set([...writes, ...reads]);
    if (gated.size === 0) return;
    const anonymousMetered = new Set([...gated].filter((method) => listed(METERED_WHEN_ANONYMOUS, method)));
    const own = route.onRequest;
    route.onRequest = [...(own === undefined ? [] : Array.isArray(own) ? own : [own]), gate(gated, anonymousMetered)];
  });
  app.addHook("preClose", (done) => {
    lanes.close();
    done();
  });
  return { lanes, unmatched: () => [...UNGATED_WRITES, ...METERED_WHEN_ANONYMOUS, ...GATED_READS].filter((entry) => !matched.has(entry)) };
}

/** The lane a request goes through, and whether its caller is anonymous (no credential at all). */
async function laneOf(ctx: AuthDeps, request: FastifyRequest): Promise<{ key: string; anonymous: boolean }> {
  try {
    const principal = await principalOf(ctx, request);
    if (principal === null) return { key: shareKey(request, null), anonymous: true };
    if (principal.kind === "user") return { key: shareKey(request, principal.userId), anonymous: false };
  } catch {
    // A bad credential: the route answers its 401 from the same resolution.
  }
  return { key: shareKey(request, null), anonymous: false };
}
