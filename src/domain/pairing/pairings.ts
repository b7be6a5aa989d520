import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { sql } from "kysely";
import { DAY, MINUTE, SECOND, type Clock } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";
import { isUniqueViolation, type Database, type PairingsTable } from "../../store/index.ts";
import { PAIRED_TOKEN_DAYS, type Tokens } from "../tokens/tokens.ts";
import { generateDeviceCode, generateUserCode, hashDeviceCode, normalizeUserCode } from "./codes.ts";
import { ApprovalGuard, type Lock } from "./guard.ts";
import { writeAudit } from "../operators/audit.ts";
import { ACCOUNT_SUSPENDED } from "../tokens/tokens.ts";

export const POLLING_INTERVAL_SEC = 5;
export const SLOW_DOWN_STEP_SEC = 5;
/** Each pending poll moves the expiry to now + this … */
export const PAIRING_SLIDE_MS = 10 * MINUTE;
/** … but never past start + this (spec: "hard cap 60 minutes with active polling"). */
export const PAIRING_HARD_CAP_MS = 60 * MINUTE;
export const LABEL_MAX_CHARS = 80;
// Rows stay a day past expiry so a late poll still reads `expired`, then start() prunes them.
const RETAIN_AFTER_EXPIRY_MS = DAY;
const USER_CODE_ATTEMPTS = 5;

/** The spec's `pairing` object, as embedded in an anonymous create response with `pair: true`. */
export interface PairingGrant {
  device_code: string;
  user_code: string;
  verification_url: string;
  polling_interval: number;
  expires_in: number;
}

/** `POST /api/pair/start`'s answer: the grant plus a link that pre-fills the code. */
export interface StartedPairing extends PairingGrant {
  verification_url_complete: string;
}

export type PollResult =
  | { status: "pending" }
  | { status: "approved"; token: string; expiresAt: number }
  | { status: "slow_down"; polling_interval: number }
  | { status: "denied" }
  | { status: "expired" }
  | { status: "consumed" };

/** What the approval page shows about a code before the person decides. */
export interface PendingPairing {
  userCode: string;
  label: string | null;
  expiresAt: number;
}

export type Decision = "approve" | "deny";

/**
 * The lock-out is an answer, not an exception: its 429 carries rate-limit headers, which the
 * HTTP layer formats, so the domain hands back the numbers instead of a finished error.
 */
export type Locked = { status: "locked"; lock: Lock };

/**
 * Device pairing (DECISIONS §2, RFC 8628-shaped): an agent starts a grant and polls with its
 * device code; a signed-in person approves or denies the user code; the next poll after an
 * approval receives a 30-day user token exactly once.
 */
export class Pairings {
  private readonly guard: ApprovalGuard;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly tokens: Tokens,
    private readonly config: { readonly baseUrl: string },
  ) {
    this.guard = new ApprovalGuard(db, clock);
  }

  async start(label?: string | null): Promise<StartedPairing> {
    const grant = await this.create(label ?? null, null, this.db);
    return { ...grant, verification_url_complete: this.verificationUrlFor(grant.user_code) };
  }

  /**
   * A pairing bound to an anonymous app (`POST /app` with `pair: true`); claiming that app
   * approves it through `approveBoundToApp`. Pass the create transaction as `db` so the grant
   * exists only if the app does.
   */
  async startBound(appId: string, label: string | null | undefined, db: Kysely<Database> = this.db): Promise<PairingGrant> {
    return this.create(label ?? null, appId, db);
  }

  /**
   * Approves, for `userId`, every live pending pairing bound to `appId`; the claim route calls
   * this inside its transaction. Returns how many it approved (0 when the agent stopped polling
   * and the grant expired, or someone already decided it through the user code).
   */
  async approveBoundToApp(appId: string, userId: string, db: Kysely<Database> = this.db): Promise<number> {
    const now = this.clock.now();
    const result = await db
      .updateTable("pairings")
      .set({ status: "approved", user_id: userId, decided_at: now })
      .where("app_id", "=", appId)
      .where("status", "=", "pending")
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * Ends pending grants bound to a removed app (deleted or reaped): the agent hears `expired`
   * on its next poll instead of waiting on an app that is gone.
   */
  async forgetApp(appId: string): Promise<void> {
    await this.db
      .updateTable("pairings")
      .set({ expires_at: this.clock.now() })
      .where("app_id", "=", appId)
      .where("status", "=", "pending")
      .execute();
  }

  /** `ip`: the polling agent's address, recorded with the token a delivered approval mints. */
  async poll(deviceCode: string, ip: string | null = null): Promise<PollResult> {
    const row = await this.db.selectFrom("pairings").selectAll().where("device_code_hash", "=", hashDeviceCode(deviceCode)).executeTakeFirst();
    if (row === undefined) throw apiError("not_found", "no pairing has that device_code; start a new one");
    const now = this.clock.now();
    switch (row.status) {
      case "consumed":
      case "denied":
        return { status: row.status };
      case "approved":
        // An approval outlives the sliding expiry (the agent may be between polls), not the hard cap.
        return now >= row.created_at + PAIRING_HARD_CAP_MS ? { status: "expired" } : this.deliver(row, ip);
      case "pending":
        return now >= row.expires_at ? { status: "expired" } : this.pollPending(row, deviceCode, now);
    }
  }

  /** The pending pairing behind a typed code, for the approval page; wrong codes count as guesses. */
  async lookup(userId: string, userCode: string): Promise<{ status: "pending"; pairing: PendingPairing } | Locked> {
    const found = await this.decidable(userId, userCode);
    if (found.status === "locked") return found;
    const { row } = found;
    return { status: "pending", pairing: { userCode: row.user_code, label: row.label, expiresAt: row.expires_at } };
  }

  /** Approves or denies a code as `userId`: 404 `not_found`, 410 `expired`, 409 `already_approved`. */
  async decide(userId: string, userCode: string, decision: Decision): Promise<{ status: "approved" | "denied" } | Locked> {
    const found = await this.decidable(userId, userCode);
    if (found.status === "locked") return found;
    const now = this.clock.now();
    const status = decision === "approve" ? "approved" : "denied";
    const result = await this.db
      .updateTable("pairings")
      .set({ status, user_id: userId, decided_at: now })
      .where("id", "=", found.row.id)
      .where("status", "=", "pending")
      .where("expires_at", ">", now)
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) {
      // Decided or expired between our read and our write: answer as if we had read it after.
      const again = await this.db.selectFrom("pairings").selectAll().where("id", "=", found.row.id).executeTakeFirst();
      if (again !== undefined) assertDecidable(again, now);
      throw apiError("already_approved", "this code was just decided by someone else");
    }
    return { status };
  }

  private async decidable(userId: string, userCode: string): Promise<{ status: "found"; row: PairingsTable } | Locked> {
    const reserved = await this.guard.reserve(userId);
    if ("lock" in reserved) return { status: "locked", lock: reserved.lock };
    const code = normalizeUserCode(userCode);
    const row = code === null ? undefined : await this.db.selectFrom("pairings").selectAll().where("user_code", "=", code).executeTakeFirst();
    if (row === undefined) {
      await this.guard.wrongCode(userId, reserved.guess);
      throw apiError("not_found", "no pairing has that code; check it against the one your agent shows");
    }
    await this.guard.rightCode(userId);
    assertDecidable(row, this.clock.now());
    return { status: "found", row };
  }

  private async pollPending(row: PairingsTable, deviceCode: string, now: number): Promise<PollResult> {
    const tooSoon = now - (row.last_polled_at ?? row.created_at) < row.interval_sec * SECOND;
    const updated = await this.db
      .updateTable("pairings")
      .set({
        last_polled_at: now,
        expires_at: Math.min(now + PAIRING_SLIDE_MS, row.created_at + PAIRING_HARD_CAP_MS),
        // Incremented in SQL so concurrent early polls each count; the interval never shrinks back.
        ...(tooSoon ? { interval_sec: sql<number>`interval_sec + ${SLOW_DOWN_STEP_SEC}` } : {}),
      })
      .where("id", "=", row.id)
      .where("status", "=", "pending")
      .returning("interval_sec")
      .executeTakeFirst();
    // Decided between our read and our write: answer from the new state.
    if (updated === undefined) return this.poll(deviceCode);
    return tooSoon ? { status: "slow_down", polling_interval: updated.interval_sec } : { status: "pending" };
  }

  /**
   * Hands the token to exactly one poll: the conditional UPDATE admits one winner on either
   * dialect (PostgreSQL re-checks `status` after the competing row lock is released), and the
   * token is minted in the same transaction, so a failed mint leaves the approval deliverable.
   */
  private async deliver(row: PairingsTable, ip: string | null): Promise<PollResult> {
    const userId = row.user_id;
    if (userId === null) throw new Error(`pairing ${row.id} is approved but names no user`);
    return this.db.transaction().execute(async (trx) => {
      const now = this.clock.now();
      // Approved before the account was suspended: no token until the suspension is lifted.
      const user = await trx.selectFrom("users").select(["handle", "suspended_at"]).where("id", "=", userId).executeTakeFirst();
      if (user?.suspended_at != null) throw apiError("unauthorized", ACCOUNT_SUSPENDED);
      const won = await trx
        .updateTable("pairings")
        .set({ status: "consumed", consumed_at: now })
        .where("id", "=", row.id)
        .where("status", "=", "approved")
        .executeTakeFirst();
      if (won.numUpdatedRows === 0n) return { status: "consumed" } as const;
      // Counted with the tokens the person minted; refused, the pairing stays approved for a poll after they revoke one.
      await this.tokens.refuseOverCap(userId, trx);
      const issued = await this.tokens.issue(
        "user",
        { userId, name: row.label ?? "paired agent", source: "paired", ttlMs: PAIRED_TOKEN_DAYS * DAY },
        trx,
      );
      await writeAudit(trx, now, { actor: { kind: "user", id: userId, handle: user?.handle ?? null }, ip }, { action: "token.mint", target: { kind: "token", id: issued.id }, detail: { source: "paired", name: row.label ?? "paired agent" } });
      return { status: "approved", token: issued.token, expiresAt: issued.expiresAt ?? now + PAIRED_TOKEN_DAYS * DAY } as const;
    });
  }

  private async create(label: string | null, appId: string | null, db: Kysely<Database>): Promise<PairingGrant> {
    if (label !== null && [...label].length > LABEL_MAX_CHARS) {
      throw apiError("invalid_request", `label must be at most ${LABEL_MAX_CHARS} characters`);
    }
    const now = this.clock.now();
    await db.deleteFrom("pairings").where("expires_at", "<", now - RETAIN_AFTER_EXPIRY_MS).execute();
    const device = generateDeviceCode();
    for (let attempt = 1; ; attempt++) {
      const userCode = generateUserCode();
      try {
        await db
          .insertInto("pairings")
          .values({
            id: randomUUID(),
            device_code_hash: device.hash,
            user_code: userCode,
            label: label === "" ? null : label,
            app_id: appId,
            status: "pending",
            user_id: null,
            interval_sec: POLLING_INTERVAL_SEC,
            created_at: now,
            expires_at: now + PAIRING_SLIDE_MS,
            last_polled_at: null,
            decided_at: null,
            consumed_at: null,
          })
          .execute();
      } catch (error) {
        // 34^6 codes make a clash rare; the unique index makes it impossible, and we draw again.
        if (isUniqueViolation(error) && attempt < USER_CODE_ATTEMPTS) continue;
        throw error;
      }
      return {
        device_code: device.plaintext,
        user_code: userCode,
        verification_url: `${this.config.baseUrl}/pair`,
        polling_interval: POLLING_INTERVAL_SEC,
        expires_in: PAIRING_SLIDE_MS / SECOND,
      };
    }
  }

  private verificationUrlFor(userCode: string): string {
    return `${this.config.baseUrl}/pair?code=${encodeURIComponent(userCode)}`;
  }
}

/** Throws the refusal for a code that can no longer be decided; returns for a live pending one. */
function assertDecidable(row: PairingsTable, now: number): void {
  switch (row.status) {
    case "approved":
    case "consumed":
      throw apiError("already_approved", "this code was already approved");
    case "denied":
      throw apiError("expired", "this code was denied; the agent must start pairing again");
    case "pending":
      if (now >= row.expires_at) throw apiError("expired", "this code has expired; the agent must start pairing again");
  }
}
