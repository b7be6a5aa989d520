import type { PairingGuardsTable, PairingsTable } from "./pairings.ts";
import type { SessionsTable } from "./sessions.ts";
import type { TokensTable } from "./tokens.ts";
import type { UsersTable } from "./users.ts";

/** The whole schema as Kysely sees it: one entry per table, one file per table beside this one. */
export interface Database {
  users: UsersTable;
  sessions: SessionsTable;
  tokens: TokensTable;
  pairings: PairingsTable;
  pairing_guards: PairingGuardsTable;
}

export type { PairingGuardsTable, PairingsTable, SessionsTable, TokensTable, UsersTable };
