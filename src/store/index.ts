export { bytesType, isUniqueViolation, type Dialect } from "./dialect.ts";
export { GroupCommit } from "./group-commit.ts";
export { LaggingCommit } from "./lagging-commit.ts";
export { migrate, openStore, type Store, type StoreOptions } from "./open.ts";
export type { AppVersionsTable, AppsTable, Database, PairingGuardsTable, PairingsTable, SessionsTable, TokensTable, UsersTable } from "./schema/index.ts";
export { bumpUsageRow, ensureUsageRow, lockForWrite, lockUsageRows } from "./locks.ts";
export { PreparedQuery } from "./prepared.ts";
export { WriteBatcher } from "./write-batcher.ts";
export { timeOrderedUuid } from "./time-ordered-id.ts";
