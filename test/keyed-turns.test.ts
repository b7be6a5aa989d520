import { describe, expect, it } from "vitest";
import { KeyedTurns } from "../src/store/concurrency/keyed-turns.ts";

/** A task that starts when the turns let it and ends when the test says. */
function gate(log: string[], name: string) {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    task: async () => {
      log.push(`${name} starts`);
      await opened;
      log.push(`${name} ends`);
      return name;
    },
    open,
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("KeyedTurns", () => {
  it("runs one key's tasks one after another in order, and other keys' beside them", async () => {
    const turns = new KeyedTurns();
    const log: string[] = [];
    const [a1, a2, b1] = [gate(log, "a1"), gate(log, "a2"), gate(log, "b1")];
    const results = [turns.run("a", a1.task), turns.run("a", a2.task), turns.run("b", b1.task)];
    await settle();
    expect(log).toEqual(["a1 starts", "b1 starts"]);
    a2.open();
    await settle();
    expect(log).toEqual(["a1 starts", "b1 starts"]);
    a1.open();
    b1.open();
    expect(await Promise.all(results)).toEqual(["a1", "a2", "b1"]);
    expect(log.indexOf("a2 starts")).toBeGreaterThan(log.indexOf("a1 ends"));
    await settle();
    expect(turns.size).toBe(0);
  });

  it("a failed task fails its own caller only; the next one still runs", async () => {
    const turns = new KeyedTurns();
    const failed = turns.run("a", () => Promise.reject(new Error("no")));
    const next = turns.run("a", () => Promise.resolve("yes"));
    await expect(failed).rejects.toThrow("no");
    expect(await next).toBe("yes");
    await settle();
    expect(turns.size).toBe(0);
  });
});
