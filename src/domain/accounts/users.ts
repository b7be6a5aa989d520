import { randomUUID } from "node:crypto";
import { hash as argonHash, verify as argonVerify } from "@node-rs/argon2";
import type { Kysely } from "kysely";
import type { Clock } from "../../config/clock.ts";
import { apiError, type Plan } from "../../errors/index.ts";
import { isUniqueViolation, PreparedQuery, type Database } from "../../store/index.ts";
import { writeAudit } from "../operators/audit.ts";
import { ACCOUNT_SUSPENDED } from "../tokens/tokens.ts";

// Read on every op call (the owner's plan sets its limits).
const userById = new PreparedQuery(1, (db, id: string) => db.selectFrom("users").selectAll().where("id", "=", id));

export const HANDLE_PATTERN = /^[a-z0-9][a-z0-9-]{1,38}$/;
export const PLANS: readonly Plan[] = ["free", "pro", "business", "enterprise"];
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MIN_PASSWORD = 8;

export interface User {
  id: string;
  email: string;
  handle: string;
  plan: Plan;
  createdAt: number;
  /** The account proved it receives mail at `email` (DECISIONS §1). */
  emailVerified: boolean;
  /** A person signs in; a team's account only owns apps (domain/teams). */
  kind: "person" | "team";
  /** `operator`: sees /admin (DECISIONS §15); set only by the CLI. */
  role: UserRole;
  /** Set while an operator has suspended the account: no sign-in, session or token works. */
  suspension: { at: number; reason: string } | null;
}

export const USER_ROLES = ["member", "operator"] as const;
export type UserRole = (typeof USER_ROLES)[number];

// Verifying against this when the login names nobody keeps the response time the same, so the
// timing does not reveal which emails and handles exist. Written out rather than hashed at start
// (~150 ms of every process start); it has the parameters every new hash gets (a test holds it).
export const DUMMY_HASH = "$argon2id$v=19$m=19456,t=2,p=1$Uw/DKqG8i0C7ynFQRm0Y9A$YXoFFAtLpcKjpHf6C8bUI7ZhIO5/VIfK2TYuOhil1/o";

export class Users {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async create(input: { email: string; handle: string; password: string; plan?: Plan }): Promise<User> {
    const email = input.email.trim().toLowerCase();
    const handle = input.handle.trim();
    if (!HANDLE_PATTERN.test(handle)) {
      throw apiError("invalid_handle", "handle must match ^[a-z0-9][a-z0-9-]{1,38}$");
    }
    if (!EMAIL_PATTERN.test(email)) throw apiError("invalid_request", "email is not a valid address");
    if (input.password.length < MIN_PASSWORD) {
      throw apiError("invalid_request", `password must be at least ${MIN_PASSWORD} characters`);
    }
    const user: User = { id: randomUUID(), email, handle, plan: input.plan ?? "free", createdAt: this.clock.now(), emailVerified: false, kind: "person", role: "member", suspension: null };
    const passwordHash = await argonHash(input.password);
    try {
      await this.db
        .insertInto("users")
        .values({ id: user.id, email, handle, password_hash: passwordHash, plan: user.plan, created_at: user.createdAt })
        .execute();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const taken = await this.db.selectFrom("users").select("handle").where("handle", "=", handle).executeTakeFirst();
      if (taken !== undefined) throw apiError("handle_taken", `handle ${handle} is taken`);
      // Same status and kind family as a taken handle, without confirming which address is registered.
      throw apiError("name_taken", "an account with that email already exists");
    }
    return user;
  }

  /**
   * What a sign-in's per-account limit counts under: the account a login names, whether by its
   * handle or its email (counted apart, they doubled the guesses one account took), or the login
   * as typed when it names none.
   */
  async loginKey(login: string): Promise<string> {
    const row = await this.personByLogin(login);
    return row === undefined ? `login:${login.trim().toLowerCase()}` : `user:${row.id}`;
  }

  /** The user whose email or handle is `login` and whose password matches; null otherwise. */
  async authenticate(login: string, password: string): Promise<User | null> {
    const row = await this.personByLogin(login);
    const ok = await argonVerify(row?.password_hash ?? DUMMY_HASH, password);
    if (row === undefined || !ok) return null;
    // Said only to whoever knows the password: a guesser learns nothing about the account.
    if (row.suspended_at !== null) throw apiError("unauthorized", ACCOUNT_SUSPENDED);
    return toUser(row);
  }

  /** The person a login names, by handle or email, either typed in any case. */
  private personByLogin(login: string) {
    const key = login.trim().toLowerCase();
    return this.db
      .selectFrom("users")
      .selectAll()
      .where((eb) => eb.or([eb("email", "=", key), eb("handle", "=", key)]))
      .where("kind", "=", "person")
      .executeTakeFirst();
  }

  async byId(id: string): Promise<User | null> {
    const row = await userById.takeFirst(this.db, id);
    return row === undefined ? null : toUser(row);
  }

  /** The person with this address (a team's account has none anyone can receive mail at). */
  async byEmail(email: string): Promise<User | null> {
    const row = await this.db.selectFrom("users").selectAll().where("email", "=", email.trim().toLowerCase()).where("kind", "=", "person").executeTakeFirst();
    return row === undefined ? null : toUser(row);
  }

  async byHandle(handle: string): Promise<User | null> {
    const row = await this.db.selectFrom("users").selectAll().where("handle", "=", handle).executeTakeFirst();
    return row === undefined ? null : toUser(row);
  }

  /** `brickyard user role`: the only way an account becomes an operator, recorded in the audit log. */
  async setRole(handle: string, role: UserRole): Promise<User> {
    const user = await this.byHandle(handle);
    if (user === null) throw apiError("not_found", `no user with handle ${handle}`);
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable("users").set({ role }).where("id", "=", user.id).execute();
      await writeAudit(trx, this.clock.now(), { actor: { kind: "cli" }, ip: null }, { action: "user.role", target: { kind: "user", id: user.id }, detail: { handle, role } });
    });
    return { ...user, role };
  }

  /** `brickyard user plan`: an operator's action, recorded in the audit log as the role's is. */
  async setPlan(handle: string, plan: Plan): Promise<User> {
    const user = await this.byHandle(handle);
    if (user === null) throw apiError("not_found", `no user with handle ${handle}`);
    await this.db.transaction().execute(async (trx) => {
      await trx.updateTable("users").set({ plan }).where("id", "=", user.id).execute();
      await writeAudit(trx, this.clock.now(), { actor: { kind: "cli" }, ip: null }, { action: "user.plan", target: { kind: "user", id: user.id }, detail: { handle, plan, was: user.plan } });
    });
    return { ...user, plan };
  }
}

function toUser(row: {
  id: string;
  email: string;
  handle: string;
  plan: string;
  created_at: number;
  email_verified_at: number | null;
  kind: "person" | "team";
  role: "member" | "operator";
  suspended_at: number | null;
  suspended_reason: string | null;
}): User {
  return {
    id: row.id,
    email: row.email,
    handle: row.handle,
    plan: row.plan as Plan,
    createdAt: Number(row.created_at),
    emailVerified: row.email_verified_at !== null,
    kind: row.kind,
    role: row.role,
    suspension: row.suspended_at === null ? null : { at: Number(row.suspended_at), reason: row.suspended_reason ?? "" },
  };
}
