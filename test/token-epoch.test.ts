import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../src/config/clock.ts";
import { Tokens } from "../src/domain/tokens/tokens.ts";
import { ApiError } from "../src/errors/index.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

// An op call trusts a token row it read before as long as the token epoch it reads with the app
// has not moved (migration 022). The epoch is moved by triggers, so these tests change tokens with
// raw SQL, past every code path that could have bumped it by hand.
describeEachDialect("token epoch (migration 022)", (dialect) => {
  let store: TestStore;
  let tokens: Tokens;
  let userId: string;
  const epoch = async () => Number((await store.db.selectFrom("token_epoch").select("epoch").executeTakeFirstOrThrow()).epoch);

  beforeAll(async () => {
    store = await openTestStore(dialect);
    tokens = new Tokens(store.db, systemClock, { baseUrl: "http://localhost" });
    userId = randomUUID();
    await store.db.insertInto("users").values({ id: userId, email: "e@example.test", handle: "epoch", password_hash: "x", plan: "free", created_at: 0 }).execute();
  });
  afterAll(async () => store.dispose());

  it("moves when a token is revoked, re-dated or deleted (a cascade too), and not when one is minted or touched", async () => {
    const before = await epoch();
    const minted = await tokens.mintUserToken(userId, {});
    expect(await epoch()).toBe(before);
    await store.db.updateTable("tokens").set({ last_used_at: 1 }).where("id", "=", minted.id).execute();
    expect(await epoch()).toBe(before);
    await store.db.updateTable("tokens").set({ revoked_at: 1, revoked_reason: "revoked" }).where("id", "=", minted.id).execute();
    const revoked = await epoch();
    expect(revoked).toBeGreaterThan(before);
    await store.db.updateTable("tokens").set({ expires_at: 1 }).where("id", "=", minted.id).execute();
    const redated = await epoch();
    expect(redated).toBeGreaterThan(revoked);
    await store.db.deleteFrom("tokens").where("id", "=", minted.id).execute();
    const deleted = await epoch();
    expect(deleted).toBeGreaterThan(redated);

    const other = randomUUID();
    await store.db.insertInto("users").values({ id: other, email: "o@example.test", handle: "other", password_hash: "x", plan: "free", created_at: 0 }).execute();
    await tokens.mintUserToken(other, {});
    await store.db.deleteFrom("users").where("id", "=", other).execute();
    expect(await store.db.selectFrom("tokens").select("id").where("user_id", "=", other).execute()).toEqual([]);
    expect(await epoch()).toBeGreaterThan(deleted);
  });

  it("does not move for a statement that changes no token", async () => {
    const before = await epoch();
    await store.db.updateTable("tokens").set({ expires_at: 1 }).where("id", "=", "no-such-token").execute();
    await store.db.deleteFrom("tokens").where("id", "=", "no-such-token").execute();
    expect(await epoch()).toBe(before);
  });

  it("serves a token from its cached row under the same epoch, and refuses it at the next epoch once revoked", async () => {
    const { token, id } = await tokens.mintUserToken(userId, {});
    const seen = await epoch();
    expect(await tokens.authenticate(token, seen)).toMatchObject({ kind: "user", userId, tokenId: id });
    await store.db.updateTable("tokens").set({ revoked_at: 1, revoked_reason: "revoked" }).where("id", "=", id).execute();
    // Under the epoch it was cached with, the row is used as is: no query, so no refusal. No
    // caller ever presents that epoch again once the revocation committed, as the next test shows.
    expect(await tokens.authenticate(token, seen)).toMatchObject({ tokenId: id });
    const now = await epoch();
    expect(now).toBeGreaterThan(seen);
    const refusal = await tokens.authenticate(token, now).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ApiError);
    expect((refusal as ApiError).fields.reason).toBe("token_revoked");
    // Without an epoch (every route but the op call) the row is always read.
    const plain = await tokens.authenticate(token).catch((error: unknown) => error);
    expect((plain as ApiError).fields.reason).toBe("token_revoked");
  });

  it("checks a cached row's expiry against the clock on every call", async () => {
    const { token, id } = await tokens.mintUserToken(userId, {});
    const seen = await epoch();
    await tokens.authenticate(token, seen);
    // Past expiry by the clock, with no write that moves the epoch: refused all the same.
    const late = new Tokens(store.db, { now: () => Date.now() + 30 * 24 * 3600 * 1000 }, { baseUrl: "http://localhost" });
    await late.authenticate(token, seen).catch(() => undefined);
    const refusal = await late.authenticate(token, seen).catch((error: unknown) => error);
    expect((refusal as ApiError).kind).toBe("token_expired");
    expect((await tokens.authenticate(token, seen)).tokenId).toBe(id);
  });
});
