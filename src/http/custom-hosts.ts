import type { IncomingMessage } from "node:http";
import type { FastifyRequest } from "fastify";

/** Which app a served custom hostname belongs to (domain/domains/hosts.ts), read without awaiting. */
export interface HostRouting {
  appAt(host: string | undefined): string | null;
}

/** What a request on a custom domain is routed to when it asks for anything but its app. */
export const NOT_ON_THIS_HOST = "/__brickyard/not-on-this-host";

const ROUTED = Symbol("brickyard.customHost");

// What of an app is served on its domain (DECISIONS §12): its page's and frame's own paths. Its
// source, secrets, versions, logs, MCP and the rest of the control plane stay on the main host.
const APP_PATHS = /^\/(frame|api\/[^/]+|events|assets|assets\/.+|render-token|diag|diag\/report|load-error\/report|feedback|icon\.svg|report)$/;
type Routed = IncomingMessage & { [ROUTED]?: { appId: string; host: string } };

/**
 * Fastify's `rewriteUrl`, run before routing (DECISIONS §12): on a custom domain `/` is its app's
 * page and the app's own paths (`/app/{id}/…`: frame, operations, events, assets, render tokens)
 * are served; every other path, another app's included, is routed to a 404. The main host and
 * any host that is not a served domain are left alone.
 */
export function customHostRewriter(hosts: HostRouting): (req: IncomingMessage) => string {
  return (req) => {
    const url = req.url ?? "/";
    const appId = hosts.appAt(req.headers.host);
    if (appId === null) return url;
    (req as Routed)[ROUTED] = { appId, host: (req.headers.host ?? "").toLowerCase().replace(/\.$/, "") };
    const cut = url.indexOf("?");
    const path = cut === -1 ? url : url.slice(0, cut);
    const query = cut === -1 ? "" : url.slice(cut);
    if (path === "/") return `/app/${appId}${query}`;
    if (path === `/app/${appId}`) return url;
    if (path.startsWith(`/app/${appId}/`) && APP_PATHS.test(path.slice(`/app/${appId}`.length))) return url;
    return NOT_ON_THIS_HOST;
  };
}

/** The custom domain a request came in on, with its app; null on the main host. */
export function customHostOf(request: FastifyRequest): { appId: string; host: string } | null {
  return (request.raw as Routed)[ROUTED] ?? null;
}

/**
 * The origin the browser sees for this request: the custom domain's (its scheme as the proxy
 * says, with TRUST_PROXY) or the service's. Every Origin check and every URL a page hands its
 * frame uses it, so an app's page works on its own domain as on ours.
 */
export function publicOrigin(request: FastifyRequest, baseUrl: string): string {
  const routed = customHostOf(request);
  if (routed === null) return new URL(baseUrl).origin;
  // X-Forwarded-Proto (under TRUST_PROXY) is a client's string: only the two schemes count.
  return `${request.protocol === "https" ? "https" : "http"}://${routed.host}`;
}

/**
 * Where a page on a custom domain sends a person to sign in: a path on the main host, which signs
 * them in there and sends them back with a render token (routes/domains/openOnDomain.ts), and
 * with `state`, the value the domain's page left in that browser's cookie, so the domain keeps
 * only a token this browser asked for.
 */
export function openOnDomainPath(appId: string, host: string, state?: string): string {
  return `/app/${encodeURIComponent(appId)}/open-on-domain?host=${encodeURIComponent(host)}${state === undefined ? "" : `&state=${encodeURIComponent(state)}`}`;
}
