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

it("tells when every call of an app in flight has ended: none for an idle app, not before the last", async () => {
  const invocations = new Invocations();
  const mint = (appId: string) => invocations.mint({ appId, revision: 1, op: "op", access: "write", caps: new Set() }).id;
  expect(invocations.afterCalls("a")).toBeNull();
  const [one, two, other] = [mint("a"), mint("a"), mint("b")];
  let ended = false;
  const after = invocations.afterCalls("a")?.then(() => (ended = true));
  invocations.end(one);
  invocations.end(one); // an id ended twice counts once
  invocations.end(other);
  await Promise.resolve();
  expect(ended).toBe(false);
  invocations.end(two);
  await after;
  expect(ended).toBe(true);
  expect(invocations.afterCalls("a")).toBeNull();
});
