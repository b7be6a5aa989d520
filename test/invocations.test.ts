import { expect, it } from "vitest";
import { Invocations } from "../src/runtime/executor/invocations.ts";

it("mints 144-bit invocation ids, distinct across many pool refills, each live until ended", () => {
  const invocations = new Invocations();
  const ids = Array.from({ length: 2000 }, () => invocations.mint({ appId: "a", revision: 1, op: "op", access: "read", caps: new Set() }).id);
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{24}$/);
  const [first] = ids;
  expect(invocations.get(first)?.appId).toBe("a");
  invocations.end(first ?? "");
  expect(invocations.get(first)).toBeUndefined();
});
