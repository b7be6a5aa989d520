import type { ActivityCountsTable, ActivityEventsTable } from "./activity.ts";
import type { AppBlobsTable, AppKvTable, AppStorageUsageTable } from "./app-storage.ts";
import type { AppVersionsTable } from "./app-versions.ts";
import type { AppsTable } from "./apps.ts";
import type { AssetsTable } from "./assets.ts";
import type { BlobObjectsTable } from "./blob-objects.ts";
import type { BuildBundlesTable, BuildsTable } from "./builds.ts";
import type { OpCallCountsTable } from "./call-counts.ts";
import type { AbuseReportsTable, AuditLogTable } from "./operators.ts";
import type { OauthRecordsTable } from "./oauth.ts";
import type { AppDomainsTable } from "./domains.ts";
import type { VisitorKvTable, VisitorStoresTable, VisitorTotalsTable } from "./visitor-kv.ts";
import type { IdempotencyRecordsTable } from "./idempotency.ts";
import type { FeedbackTable } from "./feedback.ts";
import type { LeasesTable } from "./leases.ts";
import type { PairingGuardsTable, PairingsTable } from "./pairings.ts";
import type { RoutinesTable } from "./routines.ts";
import type { SecretsTable, SecretVersionsTable } from "./secrets.ts";
import type { AppShareLinksTable, AppSharesTable, ShareInvitationsSentTable } from "./shares.ts";
import type { EmailVerificationsTable, OutboxTable } from "./mail.ts";
import type { SessionsTable } from "./sessions.ts";
import type { CopyRequestsTable } from "./copies.ts";
import type { AppSnapshotsTable, SnapshotEntriesTable, SnapshotValuesTable } from "./snapshots.ts";
import type { TemplateBuildersTable, TemplateListingsTable, TemplateMediaTable } from "./templates.ts";
import type { TeamInvitationsTable, TeamMembersTable, TeamsTable } from "./teams.ts";
import type { TokenEpochTable, TokensTable } from "./tokens.ts";
import type { UsersTable } from "./users.ts";
import type { WebhookDeliveriesTable, WebhooksTable } from "./webhooks.ts";

/** The whole schema as Kysely sees it: one entry per table, one file per table beside this one. */
export interface Database {
  users: UsersTable;
  abuse_reports: AbuseReportsTable;
  audit_log: AuditLogTable;
  oauth_records: OauthRecordsTable;
  app_domains: AppDomainsTable;
  visitor_kv: VisitorKvTable;
  visitor_stores: VisitorStoresTable;
  visitor_totals: VisitorTotalsTable;
  sessions: SessionsTable;
  tokens: TokensTable;
  token_epoch: TokenEpochTable;
  apps: AppsTable;
  app_versions: AppVersionsTable;
  builds: BuildsTable;
  build_bundles: BuildBundlesTable;
  idempotency_records: IdempotencyRecordsTable;
  app_kv: AppKvTable;
  app_blobs: AppBlobsTable;
  blob_objects: BlobObjectsTable;
  app_storage_usage: AppStorageUsageTable;
  activity_events: ActivityEventsTable;
  activity_counts: ActivityCountsTable;
  op_call_counts: OpCallCountsTable;
  pairings: PairingsTable;
  pairing_guards: PairingGuardsTable;
  secrets: SecretsTable;
  secret_versions: SecretVersionsTable;
  leases: LeasesTable;
  routines: RoutinesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  assets: AssetsTable;
  feedback: FeedbackTable;
  app_shares: AppSharesTable;
  app_share_links: AppShareLinksTable;
  share_invitations_sent: ShareInvitationsSentTable;
  outbox: OutboxTable;
  email_verifications: EmailVerificationsTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  team_invitations: TeamInvitationsTable;
  copy_requests: CopyRequestsTable;
  template_listings: TemplateListingsTable;
  template_media: TemplateMediaTable;
  template_builders: TemplateBuildersTable;
  app_snapshots: AppSnapshotsTable;
  snapshot_entries: SnapshotEntriesTable;
  snapshot_values: SnapshotValuesTable;
}

export type {
  AbuseReportsTable,
  AuditLogTable,
  OauthRecordsTable,
  AppDomainsTable,
  ActivityCountsTable,
  ActivityEventsTable,
  AppBlobsTable,
  AppKvTable,
  AppStorageUsageTable,
  AppVersionsTable,
  AppsTable,
  AssetsTable,
  FeedbackTable,
  LeasesTable,
  PairingGuardsTable,
  PairingsTable,
  RoutinesTable,
  SecretsTable,
  SecretVersionsTable,
  SessionsTable,
  TokensTable,
  UsersTable,
  WebhookDeliveriesTable,
  WebhooksTable,
};
