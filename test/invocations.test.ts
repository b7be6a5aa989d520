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

it("tells when every call of an app in flight has settled: none for an idle app, not before the last, not at its end", async () => {
  const invocations = new Invocations();
  const mint = (appId: string) => invocations.mint({ appId, revision: 1, op: "op", access: "write", caps: new Set() }).id;
  expect(invocations.afterCalls("a")).toBeNull();
  const [one, two, other] = [mint("a"), mint("a"), mint("b")];
  let settled = false;
  const after = invocations.afterCalls("a")?.then(() => (settled = true));
  for (const id of [one, two, other]) invocations.end(id);
  // Ended, the calls reach nothing more; the control plane may still be recording their outcome.
  expect(invocations.get(two)).toBeUndefined();
  await Promise.resolve();
  expect(settled).toBe(false);
  invocations.settle(one);
  invocations.settle(one); // an id settled twice counts once
  invocations.settle(other);
  await Promise.resolve();
  expect(settled).toBe(false);
  invocations.settle(two);
  await after;
  expect(settled).toBe(true);
  expect(invocations.afterCalls("a")).toBeNull();
});
