import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATED_READS } from "../../src/http/fair-share/install.ts";
import { makeUser, manifestOf, moduleSource } from "../helpers/apps.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { expectOneAtATimeWithRests, recordSpans } from "../helpers/spans.ts";
import { openShell } from "../helpers/web.ts";

// App reads are not metered (spec: rate limits), and some answers are large: an app's source, its
// UI inside the frame, a manifest's schemas, up to 256 KiB each. One client reading such an answer
// from 8 connections held Node's thread most of the time: a neighbour's op calls kept 0.18-0.21 of
// their rate alone (0.56-0.65 now). Those reads now take their caller's lane, as unmetered writes do.

const BIG = 200 * 1024;
const bigSource = (id: string) => moduleSource(manifestOf(id, ["which"]), `// ${"x".repeat(BIG)}`);

describe("hostile: large reads from many connections", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server.close());

  /** The lane keys `run`'s requests entered, in order (instrumentation of the real lanes). */
  async function lanesEntered(run: () => Promise<unknown>): Promise<string[]> {
    const lanes = server.fairShare.lanes;
    const enter = lanes.enter.bind(lanes);
    const keys: string[] = [];
    lanes.enter = (key) => {
      keys.push(key);
      return enter(key);
    };
    try {
      await run();
    } finally {
      lanes.enter = enter;
    }
    return keys;
  }

  it("every large read takes its caller's lane: a user's own, an app token's or a visitor's their address's", async () => {
    const owner = await makeUser(server);
    const claimed = await server.client.post("/app", { module: bigSource("read-owned") }, { token: owner.token });
    const hook = await server.client.post(`/api/v1/apps/${claimed.body.id}/webhooks`, { op: "which" }, { token: owner.token });
    const unclaimed = await server.client.post("/app", { module: bigSource("read-anon") });
    expect([claimed.status, hook.status, unclaimed.status]).toEqual([201, 201, 201]);
    const { id, token } = unclaimed.body as { id: string; token: string };
    const query = await openShell(server, `/app/${id}`);

    const asOwner = [
      () => server.client.get(`/app/${claimed.body.id}/source`, { token: owner.token }),
      () => server.client.get(`/app/${claimed.body.id}/versions/1`, { token: owner.token }),
      () => server.client.get(`/api/v1/webhooks/${hook.body.webhook.id}/deliveries`, { token: owner.token }),
      () => server.client.get(`/apps/${claimed.body.id}/source`, { cookie: owner.cookie }),
    ];
    const byAddress = [
      () => server.client.get(`/app/${id}/source`, { token }),
      () => server.client.request("HEAD", `/app/${id}/source`, undefined, { token }),
      () => server.client.get(`/app/${id}/frame?t=${query}`),
      () => server.client.get(`/app/${id}/describe`),
      () => server.client.get(`/app/${id}/agent.json`),
      () => server.client.get("/.well-known/openapi.json"),
    ];
    for (const read of asOwner) {
      const keys = await lanesEntered(async () => expect((await read()).status).toBe(200));
      expect(keys).toEqual([`user:${owner.id}`]);
    }
    for (const read of byAddress) {
      const keys = await lanesEntered(async () => expect((await read()).status).toBe(200));
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(/^address:/);
    }
    // Small reads do not wait: the shell page, the list of versions, an app's own details.
    const small = await lanesEntered(async () => {
      expect((await server.client.get(`/app/${id}`, { headers: { accept: "text/html" } })).status).toBe(200);
      expect((await server.client.get(`/app/${id}/versions`, { token })).status).toBe(200);
    });
    expect(small).toEqual([]);
    expect(GATED_READS.size).toBeGreaterThan(0);
    expect(server.fairShare.unmatched()).toEqual([]);
  });

  it("one token's concurrent reads of a large source run one at a time with rests; the owner of another app reads meanwhile", async () => {
    const anonymous = await server.client.post("/app", { module: bigSource("read-flood") });
    const owner = await makeUser(server);
    const other = await server.client.post("/app", { module: bigSource("read-other") }, { token: owner.token });
    const { id, token } = anonymous.body as { id: string; token: string };
    // When each read of a source ran, and of which app.
    const { spans, restore } = recordSpans(server.ctx.apps, { readSource: (args) => args[0] as string });
    try {
      const reads = Array.from({ length: 6 }, () => server.client.get(`/app/${id}/source`, { token }));
      const ownerRead = server.client.get(`/app/${other.body.id}/source`, { token: owner.token });
      const answers = await Promise.all([...reads, ownerRead]);
      expect(answers.map((res) => res.status)).toEqual(Array(7).fill(200));
      expect((answers[0]?.body.module as string).length).toBeGreaterThan(BIG);
    } finally {
      restore();
    }
    const flood = spans.filter((span) => span.who === id);
    expect(flood).toHaveLength(6);
    expectOneAtATimeWithRests(flood);
    const theirs = spans.find((span) => span.who === other.body.id);
    expect(theirs?.end).toBeLessThan(Math.max(...flood.map((span) => span.end)));
    await expect.poll(() => server.fairShare.lanes.size).toBe(0);
  });
});
