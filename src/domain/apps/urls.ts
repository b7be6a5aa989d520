/** Where an app lives (DECISIONS §3). */
export interface UrlSubject {
  id: string;
  manifestId: string;
  /** The owner's handle; null while the app is unclaimed. */
  ownerHandle: string | null;
}

/** The owner-canonical URL: `/@handle/manifestId` once claimed, `/app/{id}` while unclaimed. */
export function canonicalUrl(baseUrl: string, app: UrlSubject): string {
  return app.ownerHandle === null ? uuidUrl(baseUrl, app.id) : `${baseUrl}/@${app.ownerHandle}/${app.manifestId}`;
}

/** The UUID-form URL, which redirects to the canonical one for claimed apps. */
export function uuidUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/app/${id}`;
}

/** The ETag of a source revision: the revision in straight double quotes. */
export function revisionEtag(revision: number): string {
  return `"${revision}"`;
}
