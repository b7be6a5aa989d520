import type { Kysely } from "kysely";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import { UUID } from "../ids.ts";
import { widest, type AppRole } from "../access/access.ts";
import { listedPage, type AppRecord } from "./queries.ts";

export const LIST_DEFAULT_LIMIT = 50;

export interface ListedApp {
  app: AppRecord;
  role: AppRole;
}

/**
 * GET /app: the user's apps newest first by creation (an upsert does not move a row), in
 * keyset pages. The cursor is the (createdAt, id) of the last row, opaque to clients. Apps shared
 * with the user (accepted) are listed with their share's role, team apps with the membership's.
 */
export async function listApps(
  db: Kysely<Database>,
  userId: string,
  limit: number,
  cursor: string | null,
  search: string | null = null,
): Promise<{ rows: ListedApp[]; nextCursor: string | null }> {
  const after = cursor === null ? null : decodeCursor(cursor);
  // One extra row tells whether another page exists without a count query.
  const rows = await listedPage(db, userId, limit + 1, after, search);
  const page = rows.slice(0, limit);
  const last = page.at(-1)?.app;
  const nextCursor = rows.length > limit && last !== undefined ? encodeCursor(last.createdAt, last.id) : null;
  return { rows: page.map(({ app, shareRole, teamRole }) => ({ app, role: rowRole(app, userId, shareRole, teamRole) })), nextCursor };
}

/** The widest of the relations the row was found by, as `Apps.roleOf` would rank them. */
function rowRole(app: AppRecord, userId: string, shareRole: string | null, teamRole: string | null): AppRole {
  if (app.ownerUserId === userId) return "owner";
  const team: AppRole | null = teamRole === null ? null : teamRole === "member" ? "team-member" : "team-admin";
  return widest(team, shareRole as AppRole | null) ?? "viewer";
}

function encodeCursor(createdAt: number, id: string): string {
  return Buffer.from(JSON.stringify([createdAt, id]), "utf8").toString("base64url");
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    // The id as issued (a uuid): anything else, a NUL say, is no cursor of ours, and PostgreSQL refuses a NUL outright.
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === "string" && UUID.test(value[1])) {
      return { createdAt: value[0] as number, id: value[1] };
    }
  } catch {
    // Falls through to the refusal below.
  }
  throw apiError("invalid_request", "cursor is not one this server issued; start again without it");
}
