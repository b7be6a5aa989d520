export { bytesType, isUniqueViolation, type Dialect } from "./dialect.ts";
export { migrate, openStore, type Store, type StoreOptions } from "./open.ts";
export type { Database, PairingGuardsTable, PairingsTable, SessionsTable, TokensTable, UsersTable } from "./schema/index.ts";
