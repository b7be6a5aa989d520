import type { AppRole } from "../../domain/access/access.ts";
import { visibleOperations } from "../../domain/access/operations-view.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import { canonicalUrl } from "../../domain/apps/urls.ts";

/** The fields the create and update responses share. */
export function appView(baseUrl: string, app: AppRecord, warnings: string[]) {
  return {
    ok: true as const,
    id: app.id,
    manifestId: app.manifestId,
    displayName: app.displayName,
    url: canonicalUrl(baseUrl, app),
    capabilities: app.manifest.capabilities,
    icon: app.icon,
    claimed: app.ownerUserId !== null,
    revision: app.revision,
    version: app.manifest.version ?? `rev-${app.revision}`,
    // Present only when the static checks found something (spec: App create response).
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** What `GET /app/{id}/describe` says of an app, as `role` may see it; agent.json builds on it. */
export function describeView(baseUrl: string, a: AppRecord, role: AppRole) {
  return {
    ok: true as const,
    id: a.id,
    manifestId: a.manifestId,
    name: a.displayName,
    description: a.manifest.description,
    icon: a.icon,
    iconUrl: `${baseUrl}/app/${a.id}/icon.svg`,
    url: canonicalUrl(baseUrl, a),
    revision: a.revision,
    role,
    operations: visibleOperations(a.manifest, role),
  };
}
