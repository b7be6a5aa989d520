export { ApiError, apiError, type ErrorEnvelope, type ErrorFields, type Plan, type TokenReason } from "./api-error.ts";
export { ERROR_STATUS, isErrorKind, type ErrorKind } from "./kinds.ts";
export { recovery, type Recovery, type ShrinkField } from "./recovery.ts";
