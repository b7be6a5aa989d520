import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ExecutorChannel } from "../src/runtime/executor/channel.ts";
import { appModule, startHarness, type Harness } from "./helpers/executor.ts";

const KV = "svc:storage/kv@1.0";

/**
 * An isolate reports its background work to Node in a frame of its own only when the count moves
 * with no call in flight (the shim's `background`): the evidence blame.ts charges a late stall
 * with. The shim's write-behind timer is cleared while its call is still in flight: cleared
 * after, each op that wrote KV sent such a frame as it answered (0.64 a call under load), for
 * nothing. Executor-level, so on SQLite only.
 */
describe("executor: background reports", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ dialect: "sqlite", processes: 1 });
  });
  afterAll(async () => h.close());

  it("an op that writes KV and answers leaves no background to report; a timer it leaves running does", async () => {
    const manifest = { id: "bg-writer", routes: { put: {}, later: {}, noop: { access: "read" as const } }, capabilities: { imports: [KV] } };
    const app = {
      ...h.code.publish(
        "bg-writer",
        appModule(
          {
            put: `async (i, env) => { await env.KV.set("k" + i.n, i.n); return i.n }`,
            later: `async () => { setTimeout(() => {}, 20); return "armed" }`,
            noop: `async () => "ok"`,
          },
          manifest,
        ),
        manifest,
      ),
      plan: "enterprise" as const,
    };
    expect(await h.call(app, "noop")).toBe("ok");
    // The frames the process sends of its own accord, between answers: [app, pending].
    const reports: [unknown, unknown][] = [];
    const channel = ExecutorChannel.prototype as unknown as { receive: (data: Buffer) => void };
    const original = channel.receive;
    const receive = vi.spyOn(channel, "receive").mockImplementation(function (this: unknown, data: Buffer) {
      const header = JSON.parse(data.toString("utf8", 4, 4 + data.readUInt32BE(0))) as { t?: string; appId?: unknown; bg?: unknown[] };
      if (header.t === "bg") reports.push([header.appId, header.bg?.[0]]);
      original.call(this, data);
    });
    try {
      for (let n = 0; n < 5; n++) expect(await h.call(app, "put", { n })).toBe(n);
      // Frames come in order on the process's one channel: a later call's answer follows any report sent before it.
      expect(await h.call(app, "noop")).toBe("ok");
      expect(reports).toEqual([]);

      // The app's own work is still reported: its timer, left pending as the op answered, when it ends.
      expect(await h.call(app, "later")).toBe("armed");
      await vi.waitFor(() => expect(reports).toContainEqual(["bg-writer", 0]));
      expect(await h.storage.kvGet("bg-writer", "k4")).toBe("4");
    } finally {
      receive.mockRestore();
    }
  });
});
