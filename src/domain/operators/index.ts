export { AUDIT_KEEP_MS, AuditLog, writeAudit, type AuditAction, type AuditActor, type AuditContext, type AuditEvent, type AuditFilter, type AuditRow } from "./audit.ts";
export { Directory, LISTING_LIMIT, type AppListing, type UserListing } from "./directory.ts";
export { ABUSE_REASONS, AbuseReports, DETAILS_MAX_BYTES, type AbuseReason, type AbuseReport } from "./reports.ts";
export { REASON_MAX_CHARS, Suspensions, type SuspensionListener } from "./suspensions.ts";
