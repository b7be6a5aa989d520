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
