import { apiError, recovery } from "../../errors/index.ts";
import { revisionEtag } from "./urls.ts";

const STRONG_ETAG = /^"(0|[1-9][0-9]{0,14})"$/;

/**
 * The revision a source edit is made against: `If-Match: "N"` or `expected_revision` in the body
 * (DECISIONS §3). Missing both → 428 `precondition_required`; an If-Match that is not exactly
 * `"N"` (unquoted, weak, a list, `*`) → 412 `invalid_if_match`. Both carry the current ETag and a
 * refetch hint so the caller can recover in one step.
 */
export function expectedRevision(
  ifMatch: string | undefined,
  bodyRevision: number | undefined,
  current: number,
  sourceUrl: string,
): number {
  const headers = { ETag: revisionEtag(current) };
  if (ifMatch !== undefined) {
    const match = STRONG_ETAG.exec(ifMatch.trim());
    if (match?.[1] === undefined) {
      throw apiError(
        "invalid_if_match",
        `If-Match must be exactly the revision in straight double quotes, like "${current}"; got ${ifMatch}`,
        { recovery: recovery.refetch(sourceUrl) },
        { headers },
      );
    }
    return Number(match[1]);
  }
  if (bodyRevision !== undefined) return bodyRevision;
  throw apiError(
    "precondition_required",
    'send If-Match: "N" with the revision from GET /app/{id}/source (or expected_revision in the body)',
    { recovery: recovery.refetch(sourceUrl) },
    { headers },
  );
}

/** 412 `revision_mismatch`: the caller wrote against `sent`, the source is at `current`. */
export function revisionMismatch(sourceUrl: string, sent: number, current: number) {
  return apiError(
    "revision_mismatch",
    `the source is at revision ${current}, not ${sent}; fetch it again and reapply your edits`,
    { recovery: recovery.refetch(sourceUrl), details: { currentRevision: current, etag: revisionEtag(current) } },
    { headers: { ETag: revisionEtag(current) } },
  );
}

/** 409 `manifest_id_immutable` when an update's manifest names another id than the app's. */
export function assertSameManifestId(current: string, next: string): void {
  if (next === current) return;
  throw apiError("manifest_id_immutable", `this app's manifest id is "${current}"; an update cannot change it to "${next}"`, {
    recovery: recovery.rename(`Keep manifest.id "${current}" to update this app, or create a new app with POST /app to use "${next}".`),
  });
}
