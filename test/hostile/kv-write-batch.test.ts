import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDialect } from "../helpers/dialects.ts";
import { appModule, startHarness, type Harness } from "../helpers/executor.ts";

const KV = "svc:storage/kv@1.0";

/**
 * On PostgreSQL the KV writes of concurrent ops share one statement (KvSetBatch). An app that
 * writes what the store cannot hold (PostgreSQL's text cannot hold U+0000, and apps choose their
 * keys) must fail only its own op, never the writes of the apps whose calls came in its turn.
 */
describeEachDialect("hostile: a poisoned KV write in a shared batch", (dialect) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect });
  });
  afterAll(async () => h.close());

  it("leaves every concurrent write of other apps landed", async () => {
    const manifest = (id: string) => ({ id, routes: { put: {} }, capabilities: { imports: [KV] } });
    const attacker = h.code.publish("nul-writer", appModule({ put: `async (i, env) => { await env.KV.set("a\\u0000" + i.n, i.n); return i.n }` }, manifest("nul-writer")), manifest("nul-writer"));
    const victim = h.code.publish("bystander", appModule({ put: `async (i, env) => { await env.KV.set("k" + i.n, i.n); return i.n }` }, manifest("bystander")), manifest("bystander"));
    const attacks: PromiseSettledResult<unknown>[] = [];
    for (let round = 0; round < 10; round++) {
      const [attack, ...innocent] = await Promise.allSettled([h.call(attacker, "put", { n: round }), h.call(victim, "put", { n: round }), h.call(victim, "put", { n: round + 100 })]);
      if (attack !== undefined) attacks.push(attack);
      expect(innocent.map((o) => o.status)).toEqual(["fulfilled", "fulfilled"]);
    }
    for (let round = 0; round < 10; round++) {
      expect(await h.storage.kvGet("bystander", `k${round}`)).toBe(JSON.stringify(round));
      expect(await h.storage.kvGet("bystander", `k${round + 100}`)).toBe(JSON.stringify(round + 100));
    }
    // PostgreSQL refuses the attacker's own writes; SQLite stores them.
    expect(new Set(attacks.map((a) => a.status))).toEqual(new Set([dialect === "postgres" ? "rejected" : "fulfilled"]));
  });
});
