export { normalizeUserCode, USER_CODE_PATTERN } from "./codes.ts";
export { LOCK_MS, WRONG_CODES_ALLOWED, WRONG_CODE_WINDOW_MS, type Lock } from "./guard.ts";
export {
  LABEL_MAX_CHARS,
  PAIRING_HARD_CAP_MS,
  PAIRING_SLIDE_MS,
  POLLING_INTERVAL_SEC,
  Pairings,
  type Decision,
  type Locked,
  type PairingGrant,
  type PendingPairing,
  type PollResult,
  type StartedPairing,
} from "./pairings.ts";
