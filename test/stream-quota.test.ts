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
    const a1 = quota.take("a");
    quota.take("a");
    expect(refusal(() => quota.take("a"))).toEqual({ status: 429, kind: "too_many_requests" });
    const b1 = quota.take("b");
    expect(refusal(() => quota.take("c"))).toEqual({ status: 503, kind: "service_busy" });
    a1();
    a1();
    expect(quota.size).toEqual({ open: 2, holders: 2 });
    quota.take("c");
    b1();
    expect(quota.size).toEqual({ open: 2, holders: 2 });
  });

  it("keeps the total to half the process's open-file limit by default, 10,000 at most", () => {
    const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1]);
    expect(soft).toBeGreaterThan(0);
    expect(new StreamQuota().inAll).toBe(Math.min(10_000, Math.floor(soft / 2)));
  });
});
