export { normalizeUserCode } from "./codes.ts";
export type { Lock } from "./guard.ts";
export {
  LABEL_MAX_CHARS,
  Pairings,
  type Decision,
  type Locked,
  type PairingGrant,
  type PendingPairing,
  type PollResult,
  type StartedPairing,
} from "./pairings.ts";
