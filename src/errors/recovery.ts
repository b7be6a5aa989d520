// Recovery hints: self-contained instructions attached to an error, discriminated by `kind`.
// One builder per spec recovery kind so every route words the same hint the same way.

export type Recovery =
  | { kind: "pair"; start: string; verification_url: string; instructions: string }
  | { kind: "retry"; retry_after_sec: number; retry_after_url: string; instructions: string }
  | { kind: "shrink"; field: ShrinkField; size_bytes: number; cap_bytes: number; instructions: string }
  | { kind: "refetch"; refetch_url: string; instructions: string }
  | { kind: "fix_route_label"; instructions: string }
  | { kind: "open_existing"; existing_app_id: string; existing_url: string; instructions: string }
  | { kind: "rename"; instructions: string }
  | { kind: "migrate_contract"; instructions: string };

export type ShrinkField =
  | "module"
  | "ui"
  | "styles"
  | "description"
  | "text"
  | "structured_data"
  | "asset"
  | "edits"
  | "secret"
  | "payload";

export const recovery = {
  pair(baseUrl: string): Recovery {
    return {
      kind: "pair",
      start: `${baseUrl}/api/pair/start`,
      verification_url: `${baseUrl}/pair`,
      instructions:
        "This app was claimed and its per-app token no longer works. Start device pairing, show the user code to the person, and poll until they approve to receive a user token.",
    };
  },
  retry(retryAfterSec: number, retryAfterUrl: string): Recovery {
    return {
      kind: "retry",
      retry_after_sec: retryAfterSec,
      retry_after_url: retryAfterUrl,
      instructions: `Wait ${retryAfterSec} s, then send the same request again. Calling sooner extends the wait.`,
    };
  },
  /** `atLeast`: the size is a lower bound (a body cut off once past its cap). */
  shrink(field: ShrinkField, sizeBytes: number, capBytes: number, options: { atLeast?: boolean } = {}): Recovery {
    return {
      kind: "shrink",
      field,
      size_bytes: sizeBytes,
      cap_bytes: capBytes,
      instructions: `The ${field} is ${options.atLeast === true ? "at least " : ""}${sizeBytes} bytes; the cap is ${capBytes} bytes. Make it smaller and retry.`,
    };
  },
  refetch(refetchUrl: string): Recovery {
    return {
      kind: "refetch",
      refetch_url: refetchUrl,
      instructions: "GET the refetch URL for the current source and ETag, reapply your change to it, and retry with the new If-Match.",
    };
  },
  fixRouteLabel(op: string): Recovery {
    return {
      kind: "fix_route_label",
      instructions: `Operation "${op}" is declared access: "read" but wrote to storage. Declare it access: "write" in manifest.routes (or stop writing); retrying the same call fails again.`,
    };
  },
  openExisting(existingAppId: string, existingUrl: string): Recovery {
    return {
      kind: "open_existing",
      existing_app_id: existingAppId,
      existing_url: existingUrl,
      instructions: "You already have a copy of this app; open it instead of copying again.",
    };
  },
  rename(instructions: string): Recovery {
    return { kind: "rename", instructions };
  },
  migrateContract(instructions: string): Recovery {
    return { kind: "migrate_contract", instructions };
  },
};
