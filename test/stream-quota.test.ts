import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ApiError } from "../src/errors/index.ts";
import { StreamQuota } from "../src/http/stream-quota.ts";

describe("stream quota", () => {
  const refusal = (take: () => unknown) => {
    try {
      take();
    } catch (error) {
      if (error instanceof ApiError) return { status: error.status, kind: error.kind };
      throw error;
    }
    return null;
  };

  it("refuses a holder past its share (429) and everyone past the total (503), and gives places back once", () => {
    const quota = new StreamQuota(2, 3);
    const a1 = quota.take("a", "net-a");
    quota.take("a", "net-a");
    expect(refusal(() => quota.take("a", "net-a"))).toEqual({ status: 429, kind: "too_many_requests" });
    const b1 = quota.take("b", "net-b");
    expect(refusal(() => quota.take("c", "net-c"))).toEqual({ status: 503, kind: "service_busy" });
    a1();
    a1();
    expect(quota.size).toEqual({ open: 2, holders: 2 });
    quota.take("c", "net-c");
    b1();
    expect(quota.size).toEqual({ open: 2, holders: 2 });
  });

  it("refuses a network past its share however many holders (accounts) it opens them as, and gives places back", () => {
    const quota = new StreamQuota(2, 100, 5);
    for (const holder of ["u1", "u1", "u2", "u2", "u3"]) quota.take(`user:${holder}`, "198.51.100.7");
    expect(refusal(() => quota.take("user:u4", "198.51.100.7"))).toEqual({ status: 429, kind: "too_many_requests" });
    // Another network is not held back by this one.
    const other = quota.take("user:u4", "203.0.113.9");
    other();
    expect(quota.size).toEqual({ open: 5, holders: 3 });
  });

  it("gives a network a tenth of the total by default, and never less than a holder's share", () => {
    expect(new StreamQuota(64, 10_000).perNetwork).toBe(1_000);
    expect(new StreamQuota(64, 100).perNetwork).toBe(64);
  });

  it("keeps the total to half the process's open-file limit by default, 10,000 at most", () => {
    const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1]);
    expect(soft).toBeGreaterThan(0);
    expect(new StreamQuota().inAll).toBe(Math.min(10_000, Math.floor(soft / 2)));
  });
});
