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
