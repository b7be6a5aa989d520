/** A team: the `users` row of kind `team` with the same id holds its slug (handle) and plan. */
export interface TeamsTable {
  id: string;
  name: string;
  created_by: string;
  created_at: number;
}

export type TeamRole = "owner" | "admin" | "member";

export interface TeamMembersTable {
  team_id: string;
  user_id: string;
  role: TeamRole;
  created_at: number;
}

/**
 * An invitation by email. Only a session whose account has verified that address accepts it;
 * a re-send marks the old row `superseded` and adds a new one, so one stays pending per address.
 */
export interface TeamInvitationsTable {
  id: string;
  team_id: string;
  /** Lower-cased. */
  email: string;
  role: Exclude<TeamRole, "owner">;
  status: "pending" | "accepted" | "superseded" | "revoked";
  invited_by: string;
  created_at: number;
  expires_at: number;
  accepted_by: string | null;
  accepted_at: number | null;
}
