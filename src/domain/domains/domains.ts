import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { HOUR, iso, type Clock } from "../../config/clock.ts";
import { PLAN_LIMITS } from "../../config/plans.ts";
import { apiError, type Plan } from "../../errors/index.ts";
import { isUniqueViolation, timeOrderedUuid, type AppDomainsTable, type Database, type Dialect } from "../../store/index.ts";
import { lockRow } from "../../store/row-lock.ts";
import type { LiveEvents } from "../events/live-events.ts";
import { normaliseHostname } from "./hostname.ts";
import type { TxtLookup } from "./txt.ts";

/** DECISIONS §12: verified domains are looked at again every 6 h; one missing for 72 h is removed. */
export const RECHECK_EVERY_MS = 6 * HOUR;
export const MISSING_FOR_MS = 72 * HOUR;
/** A claim never proved goes after a week, so a name is not held in a list for good. */
export const PENDING_FOR_MS = 7 * 24 * HOUR;
const PER_APP_MAX = 10;
// Look-ups give up after 3 s each: an hourly run stays well inside its hour.
const RECHECK_BATCH = 200;

export interface DomainView {
  id: string;
  hostname: string;
  state: AppDomainsTable["state"];
  verification: { type: "TXT"; name: string; value: string };
  createdAt: string;
  verifiedAt: string | null;
}

type Row = AppDomainsTable;

function viewOf(row: Row): DomainView {
  return {
    id: row.id,
    hostname: row.hostname,
    state: row.state,
    verification: { type: "TXT", name: `_svc-verify.${row.hostname}`, value: `svc-verify=${row.token}` },
    createdAt: iso(Number(row.created_at)),
    verifiedAt: row.verified_at === null ? null : iso(Number(row.verified_at)),
  };
}

/**
 * Custom domains (DECISIONS §12): an app's own hostnames, proven by a TXT record, re-checked, and
 * served (verified or failing) by the host routing in front of the router. Every change that
 * moves what is served tells every instance (the live bus) to reload its host map.
 */
export class Domains {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly lookup: TxtLookup,
    private readonly live: LiveEvents,
    private readonly serviceHost: () => string,
  ) {}

  async list(appId: string): Promise<DomainView[]> {
    const rows = await this.db.selectFrom("app_domains").selectAll().where("app_id", "=", appId).orderBy("created_at").execute();
    return rows.map(viewOf);
  }

  /**
   * Whether `hostname` is the app's and its record was found at the last look. A failing one is
   * still served, but its name may have passed to someone else: nothing personal goes there.
   */
  async verifiedFor(appId: string, hostname: string): Promise<boolean> {
    const row = await this.db.selectFrom("app_domains").select("id").where("app_id", "=", appId).where("hostname", "=", hostname).where("state", "=", "verified").executeTakeFirst();
    return row !== undefined;
  }

  /** A served hostname of the app, if it has one (the claim and share pages show it). */
  async servedHostname(appId: string): Promise<string | null> {
    const row = await this.db.selectFrom("app_domains").select("hostname").where("app_id", "=", appId).where("state", "in", ["verified", "failing"]).orderBy("created_at").executeTakeFirst();
    return row?.hostname ?? null;
  }

  /** Adds `hostname` to the app, pending its TXT record. The caller has checked the owner's rights. */
  async add(appId: string, plan: Plan, hostname: string): Promise<DomainView> {
    if (!PLAN_LIMITS[plan].custom_domain) {
      throw apiError("plan_required", `custom domains need the pro plan or above; this app's owner is on ${plan}`, { plan, feature: "custom_domain" });
    }
    const name = normaliseHostname(hostname, this.serviceHost());
    const now = this.clock.now();
    const row: Row = { id: timeOrderedUuid(now), app_id: appId, hostname: name, state: "pending", token: randomBytes(16).toString("hex"), created_at: now, verified_at: null, checked_at: null, missing_since: null };
    await this.db.transaction().execute(async (trx) => {
      // Adds to one app one at a time, on every instance, so two cannot pass the cap together.
      await lockRow(trx, this.dialect, "apps", appId);
      // Only this app's claim, or another app serving it, holds a name: an unproved claim does not.
      const held = await trx.selectFrom("app_domains").select(["app_id", "state"]).where("hostname", "=", name).execute();
      if (held.some((r) => r.app_id === appId)) throw apiError("domain_exists", `${name} is already a domain of this app`);
      if (held.some((r) => r.state !== "pending")) throw apiError("domain_taken", `${name} is a domain of another app`);
      const count = await trx.selectFrom("app_domains").select((eb) => eb.fn.countAll<number>().as("n")).where("app_id", "=", appId).executeTakeFirstOrThrow();
      if (Number(count.n) >= PER_APP_MAX) throw apiError("invalid_request", `an app has at most ${PER_APP_MAX} domains`);
      await trx.insertInto("app_domains").values(row).execute();
    }).catch((error: unknown) => {
      // The same app adding one name twice at once: the (app, hostname) index refuses the second.
      if (isUniqueViolation(error)) throw apiError("domain_exists", `${name} is already a domain of this app`);
      throw error;
    });
    return viewOf(row);
  }

  async remove(appId: string, domainId: string): Promise<void> {
    const result = await this.db.deleteFrom("app_domains").where("id", "=", domainId).where("app_id", "=", appId).executeTakeFirst();
    if (result.numDeletedRows === 0n) throw apiError("not_found", "no such domain on this app");
    this.live.domainsChanged();
  }

  /** Looks the record up now (`POST …/verify`): the domain's new state. */
  async verify(appId: string, domainId: string): Promise<DomainView> {
    const row = await this.db.selectFrom("app_domains").selectAll().where("id", "=", domainId).where("app_id", "=", appId).executeTakeFirst();
    if (row === undefined) throw apiError("not_found", "no such domain on this app");
    const next = await this.check(row);
    if (next === null) throw apiError("not_found", "the domain was removed: its record was missing for 72 hours");
    return viewOf(next);
  }

  /**
   * The hourly job: claims pending for a week go; each domain not looked at for 6 h is looked at,
   * the longest unseen first. A look-up that fails leaves its state as it was but counts as a
   * look, so a provider that never answers cannot keep the others from their turn.
   */
  async recheck(): Promise<number> {
    const now = this.clock.now();
    await this.db.deleteFrom("app_domains").where("state", "=", "pending").where("created_at", "<=", now - PENDING_FOR_MS).execute();
    const due = await this.db
      .selectFrom("app_domains")
      .selectAll()
      .where((eb) => eb.or([eb("checked_at", "is", null), eb("checked_at", "<=", now - RECHECK_EVERY_MS)]))
      .orderBy((eb) => eb.fn.coalesce("checked_at", eb.lit(0)))
      .limit(RECHECK_BATCH)
      .execute();
    let checked = 0;
    for (const row of due) {
      try {
        await this.check(row);
        checked += 1;
      } catch {
        // domain_provider_unavailable: nothing is known; it waits its next turn.
        await this.db.updateTable("app_domains").set({ checked_at: now }).where("id", "=", row.id).execute();
      }
    }
    return checked;
  }

  /** DECISIONS §12's `tls-allowed`: a certificate only for a hostname that is served. */
  async served(hostname: string): Promise<boolean> {
    const row = await this.db.selectFrom("app_domains").select("id").where("hostname", "=", hostname.toLowerCase().replace(/\.$/, "")).where("state", "<>", "pending").executeTakeFirst();
    return row !== undefined;
  }

  /** Every served hostname and its app: what each instance's host map holds. */
  async allServed(): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom("app_domains").select(["hostname", "app_id"]).where("state", "in", ["verified", "failing"]).execute();
    return new Map(rows.map((row) => [row.hostname, row.app_id]));
  }

  /** One look-up and the state it leads to; null when the domain is removed. */
  private async check(row: Row): Promise<Row | null> {
    const found = (await this.lookup.txt(`_svc-verify.${row.hostname}`)).includes(`svc-verify=${row.token}`);
    const now = this.clock.now();
    let next: Row;
    if (found) next = { ...row, state: "verified", verified_at: row.verified_at ?? now, missing_since: null, checked_at: now };
    else if (row.state === "pending") next = { ...row, checked_at: now };
    else {
      const since = row.missing_since ?? now;
      if (now - Number(since) >= MISSING_FOR_MS) {
        await this.db.deleteFrom("app_domains").where("id", "=", row.id).execute();
        this.live.domainsChanged();
        return null;
      }
      next = { ...row, state: "failing", missing_since: since, checked_at: now };
    }
    try {
      await this.db.transaction().execute(async (trx) => {
        await trx
          .updateTable("app_domains")
          .set({ state: next.state, verified_at: next.verified_at, missing_since: next.missing_since, checked_at: next.checked_at })
          .where("id", "=", row.id)
          .execute();
        // The first claim proved wins the name; the others' are void.
        if (row.state === "pending" && next.state === "verified") await trx.deleteFrom("app_domains").where("hostname", "=", row.hostname).where("id", "<>", row.id).where("state", "=", "pending").execute();
      });
    } catch (error) {
      // Another app proved it first (the served-hostname index): this claim is void.
      if (!isUniqueViolation(error)) throw error;
      await this.db.deleteFrom("app_domains").where("id", "=", row.id).execute();
      throw apiError("domain_taken", `${row.hostname} is a domain of another app`);
    }
    if (next.state !== row.state) this.live.domainsChanged();
    return next;
  }
}
