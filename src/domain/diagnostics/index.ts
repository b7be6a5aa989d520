export { Activity, ACTIVITY_KINDS, parseActivityQuery, redact, type ActivityEvent, type ActivityKind, type ActivityQuery } from "./activity.ts";
export { DiagRing, DIAG_CAPACITY, sourcePosition, type DiagEntry } from "./diag-ring.ts";
export { authorizeActivity, authorizeDiag, type DiagnosticsCaller, type RoleOracle } from "./access.ts";
export { CallCounts, type HourCounts } from "./call-counts.ts";
