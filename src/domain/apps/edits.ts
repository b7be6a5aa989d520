import { apiError, recovery } from "../../errors/index.ts";
import type { SourceBundle } from "../source/source.ts";

export const EDITS_CAP_BYTES = 512 * 1024;

export interface SourceEdit {
  bucket: "module" | "ui" | "styles";
  old_string: string;
  new_string: string;
}

/** 413 `edits_too_large` when the batch, serialized, is over 512 KiB (DECISIONS §3). */
export function checkEditsSize(edits: SourceEdit[]): void {
  const size = Buffer.byteLength(JSON.stringify(edits), "utf8");
  if (size > EDITS_CAP_BYTES) {
    throw apiError("edits_too_large", `the edits are ${size} bytes serialized; the cap is ${EDITS_CAP_BYTES} bytes`, {
      limit: EDITS_CAP_BYTES,
      recovery: recovery.shrink("edits", size, EDITS_CAP_BYTES),
    });
  }
}

/**
 * Applies the edits in order, each to the result of the ones before, and returns the new
 * buckets. Any edit that does not match exactly once fails the whole batch (nothing is written).
 */
export function applyEdits(current: SourceBundle, edits: SourceEdit[]): SourceBundle {
  const next: Record<SourceEdit["bucket"], string | null> = { module: current.module, ui: current.ui, styles: current.styles };
  edits.forEach((edit, index) => {
    const text = next[edit.bucket] ?? "";
    const at = text.indexOf(edit.old_string);
    const where = { details: { index, bucket: edit.bucket } };
    if (at === -1) {
      throw apiError("old_string_not_found", `edits[${index}].old_string does not occur in ${edit.bucket}; GET the source and copy the text exactly`, where);
    }
    // Searching from at + 1 also catches overlapping matches ("aa" in "aaa"), which are ambiguous too.
    if (text.indexOf(edit.old_string, at + 1) !== -1) {
      throw apiError("old_string_not_unique", `edits[${index}].old_string occurs more than once in ${edit.bucket}; include more surrounding text`, where);
    }
    next[edit.bucket] = text.slice(0, at) + edit.new_string + text.slice(at + edit.old_string.length);
  });
  return { module: next.module ?? "", ui: next.ui, styles: next.styles };
}
