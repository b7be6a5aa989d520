import { apiError } from "../../errors/index.ts";
import type { Suspension } from "./queries.ts";

/** DECISIONS §15: what a suspended app's callers are told; the reason is the owner's and operators' to read. */
export const SUSPENDED_MESSAGE = "suspended by the operator";

/** 403 `forbidden` for an app an operator suspended, itself or through its owner's account. */
export function refuseSuspended(app: { suspension: Suspension | null }): void {
  if (app.suspension !== null) throw apiError("forbidden", SUSPENDED_MESSAGE, { details: { suspended: true } });
}
