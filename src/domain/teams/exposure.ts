import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import type { Database } from "../../store/index.ts";
import type { Teams } from "./teams.ts";

/** Audiences, widest first: an app counts once, under the first that applies (spec: Team exposure summary). */
export const AUDIENCES = ["public", "template", "signed-in", "shared", "private"] as const;
export type Audience = (typeof AUDIENCES)[number];
export type Exposure = Record<Audience, number> & { externalShares: number };

export interface LedgerEntry {
  type: "grant" | "invitation" | "link";
  id: string;
  appId: string;
  appName: string;
  /** The person's handle or the invited address; null for a link. */
  grantee: string | null;
  role: string;
  status: "accepted" | "pending" | "invited" | "expired" | "live";
  /** A grantee outside the team (links have none). */
  external: boolean;
  createdAt: number;
}

export const LEDGER_SORTS = ["newest", "oldest"] as const;
export type LedgerSort = (typeof LEDGER_SORTS)[number];

/**
 * What a team exposes and to whom, for its owners and admins: the exposure summary and the
 * ledger of grants, invitations and live share links across the team's apps.
 */
export class TeamExposure {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly teams: Teams,
  ) {}

  async exposure(teamId: string, actorId: string): Promise<Exposure> {
    const { team } = await this.teams.requireAdmin(teamId, actorId);
    const apps = await this.db
      .selectFrom("apps")
      .leftJoin("template_listings", (join) => join.onRef("template_listings.app_id", "=", "apps.id").on("template_listings.enabled", "=", 1))
      .select(["apps.id", "apps.visibility", "template_listings.app_id as template"])
      .where("apps.owner_user_id", "=", team.id)
      .execute();
    const entries = await this.entries(team.id);
    const shared = new Set(entries.filter((e) => e.status !== "expired").map((e) => e.appId));
    const counts: Exposure = { public: 0, template: 0, "signed-in": 0, shared: 0, private: 0, externalShares: 0 };
    for (const app of apps) counts[audienceOf(app.visibility, app.template !== null, shared.has(app.id))] += 1;
    counts.externalShares = entries.filter((e) => e.external && e.type !== "link" && e.status !== "expired").length;
    return counts;
  }

  /** The ledger, newest first unless `sort` is `oldest`. */
  async ledger(teamId: string, actorId: string, sort: string | undefined): Promise<LedgerEntry[]> {
    const order = sort ?? "newest";
    if (!(LEDGER_SORTS as readonly string[]).includes(order)) throw apiError("invalid_request", `sort must be one of ${LEDGER_SORTS.join(", ")}`);
    const { team } = await this.teams.requireAdmin(teamId, actorId);
    const entries = await this.entries(team.id);
    const sign = order === "oldest" ? 1 : -1;
    return entries.sort((a, b) => sign * (a.createdAt - b.createdAt) || a.id.localeCompare(b.id));
  }

  private async entries(teamId: string): Promise<LedgerEntry[]> {
    const now = this.clock.now();
    const members = new Set(
      (
        await this.db
          .selectFrom("team_members")
          .innerJoin("users", "users.id", "team_members.user_id")
          .select(["users.id", "users.email", "users.email_verified_at"])
          .where("team_members.team_id", "=", teamId)
          .execute()
      ).flatMap((m) => (m.email_verified_at === null ? [m.id] : [m.id, m.email])),
    );
    const shares = await this.db
      .selectFrom("app_shares")
      .innerJoin("apps", "apps.id", "app_shares.app_id")
      .leftJoin("users", "users.id", "app_shares.grantee_user_id")
      .select(["app_shares.id", "app_shares.app_id", "apps.display_name", "app_shares.grantee_user_id", "app_shares.grantee_email", "users.handle", "app_shares.role", "app_shares.status", "app_shares.expires_at", "app_shares.created_at"])
      .where("apps.owner_user_id", "=", teamId)
      .execute();
    const links = await this.db
      .selectFrom("app_share_links")
      .innerJoin("apps", "apps.id", "app_share_links.app_id")
      .select(["app_share_links.id", "app_share_links.app_id", "apps.display_name", "app_share_links.role", "app_share_links.created_at"])
      .where("apps.owner_user_id", "=", teamId)
      .execute();
    return [
      ...shares.map((s): LedgerEntry => ({
        type: s.status === "accepted" ? "grant" : "invitation",
        id: s.id,
        appId: s.app_id,
        appName: s.display_name,
        grantee: s.handle ?? s.grantee_email,
        role: s.role,
        status: s.status !== "accepted" && s.expires_at <= now ? "expired" : s.status,
        external: !members.has(s.grantee_user_id ?? s.grantee_email ?? ""),
        createdAt: Number(s.created_at),
      })),
      ...links.map((l): LedgerEntry => ({
        type: "link",
        id: l.id,
        appId: l.app_id,
        appName: l.display_name,
        grantee: null,
        role: l.role,
        status: "live",
        external: false,
        createdAt: Number(l.created_at),
      })),
    ];
  }
}

function audienceOf(visibility: string, template: boolean, shared: boolean): Audience {
  if (visibility === "public") return "public";
  // A published template's code is open to anyone signed in to copy.
  if (template) return "template";
  if (visibility === "signed-in") return "signed-in";
  return shared ? "shared" : "private";
}

/** The CSV form: a header and the one summary row (spec: `format=csv`). */
export function exposureCsv(e: Exposure): string {
  const columns = [...AUDIENCES, "externalShares"] as const;
  return `${columns.join(",")}\r\n${columns.map((c) => String(e[c])).join(",")}\r\n`;
}
