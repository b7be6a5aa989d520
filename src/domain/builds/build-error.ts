import type { ErrorKind } from "../../errors/index.ts";

/** Where in the module a build failure points, when it points anywhere. */
export interface BuildErrorDetails {
  specifier?: string;
  line?: number;
  column?: number;
}

export type BuildErrorKind = Extract<ErrorKind, "app_build_failed" | "app_build_unavailable" | "app_build_expired" | "app_build_authority_lost">;

/**
 * Why a build stopped: stored on the job as the spec's `error` object. `retryable` failures (the
 * registry unreachable) are tried again by the next lease until the deadline; the rest are final.
 */
export class BuildError extends Error {
  constructor(
    readonly kind: BuildErrorKind,
    message: string,
    readonly details: BuildErrorDetails = {},
  ) {
    super(message);
  }

  get retryable(): boolean {
    return this.kind === "app_build_unavailable";
  }

  toJSON(): { kind: BuildErrorKind; message: string; retryable: boolean; details?: BuildErrorDetails } {
    return { kind: this.kind, message: this.message, retryable: this.retryable, ...(Object.keys(this.details).length > 0 ? { details: this.details } : {}) };
  }
}
