import type { Generated } from "kysely";

export interface UsersTable {
  id: string;
  /** Lower-cased; unique. */
  email: string;
  /** `^[a-z0-9][a-z0-9-]{1,38}$`; unique. */
  handle: string;
  /** argon2id PHC string. */
  password_hash: string;
  plan: Generated<string>;
  created_at: number;
  /** When the account followed an emailed verification link for its current address; null until then. */
  email_verified_at: number | null;
  /** `person`, or `team`: a team's account, which owns its apps and never signs in (teams.ts). */
  kind: Generated<"person" | "team">;
  /** `operator` (set only by the CLI: `brickyard user role`) sees /admin; everyone else is a `member`. */
  role: Generated<"member" | "operator">;
  /** Set while an operator has suspended the account (DECISIONS §15); its apps stop with it. */
  suspended_at: number | null;
  suspended_reason: string | null;
}
