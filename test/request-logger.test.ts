import { Writable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import { pino, type Bindings, type ChildLoggerOptions } from "pino";
import { describe, expect, it } from "vitest";
import { LazyRequestLogger } from "../src/http/request-logger.ts";

// Issue 20: Fastify makes a child logger per request; ours is made only when the request logs.

/** A pino logger writing to memory, and a parent for the lazy loggers that counts the children made of it. */
function capture(): { log: FastifyBaseLogger; lines: () => Record<string, unknown>[]; children: () => number } {
  const text: string[] = [];
  const root = pino({ level: "info" }, new Writable({ write: (chunk: Buffer, _encoding, done) => (text.push(chunk.toString()), done()) }));
  let children = 0;
  const log = Object.create(root, { child: { value: (bindings: Bindings, options?: ChildLoggerOptions) => (children++, root.child(bindings, options)) } }) as FastifyBaseLogger;
  return { log, lines: () => text.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>), children: () => children };
}

describe("LazyRequestLogger", () => {
  it("makes no child for a request that logs nothing, and one, with its bindings, for one that does", () => {
    const { log, lines, children } = capture();
    const quiet = LazyRequestLogger.factory(log, { reqId: "r1" }, {});
    quiet.debug("below the level");
    expect(quiet.level).toBe("info");
    expect(children()).toBe(0);

    const loud = LazyRequestLogger.factory(log, { reqId: "r2" }, {});
    loud.warn({ statusCode: 500 }, "request answered");
    loud.error("twice");
    expect(children()).toBe(1);
    expect(lines()).toMatchObject([
      { level: 40, reqId: "r2", statusCode: 500, msg: "request answered" },
      { level: 50, reqId: "r2", msg: "twice" },
    ]);
  });

  it("keeps a route's level, and one set before the child is made", () => {
    const { log, lines } = capture();
    const route = LazyRequestLogger.factory(log, { reqId: "r3" }, { level: "debug" });
    expect(route.level).toBe("debug");
    route.debug("seen at the route's level");
    const lowered = LazyRequestLogger.factory(log, { reqId: "r4" }, {});
    lowered.level = "error";
    expect(lowered.level).toBe("error");
    lowered.warn("not seen");
    lowered.error("seen");
    expect(lines().map((line) => [line.reqId, line.msg])).toEqual([
      ["r3", "seen at the route's level"],
      ["r4", "seen"],
    ]);
    // A grandchild carries both bindings.
    route.child({ step: "inner" }).info("nested");
    expect(lines().at(-1)).toMatchObject({ reqId: "r3", step: "inner", msg: "nested" });
  });
});
