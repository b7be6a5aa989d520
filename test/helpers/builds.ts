import { randomUUID } from "node:crypto";
import type { Insertable } from "kysely";
import { expect } from "vitest";
import type { BuildsTable } from "../../src/store/schema/builds.ts";
import type { ApiResponse } from "./client.ts";
import type { TestServer } from "./server.ts";

const TERMINAL = ["published", "failed", "superseded", "canceled", "expired"];

/** Polls a build's status URL (long-polling with Prefer: wait) until a terminal state. */
export async function settle(server: TestServer, status: ApiResponse["body"], token: string): Promise<ApiResponse["body"]> {
  let body = status;
  for (let i = 0; i < 60 && !TERMINAL.includes(body.state); i++) {
    const res = await server.client.get(new URL(body.statusUrl).pathname, { token, headers: { prefer: "wait=5" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    body = res.body;
  }
  return body;
}

/**
 * Puts `count` queued builds by `actor` (the JSON of an Actor; "null" for anonymous) in the
 * queue, leased far ahead so no runner takes them. Remove them by `lease_holder = 'test'`.
 */
export async function fillQueue(server: TestServer, count: number, actor: string, overrides: Partial<Insertable<BuildsTable>> = {}): Promise<string[]> {
  const now = Date.now();
  const rows = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    app_id: randomUUID(),
    intent: "create" as const,
    state: "queued" as const,
    actor,
    base_revision: null,
    module: `// filler ${i}`,
    ui: null,
    styles: null,
    input_digest: "filler",
    prior_lock: null,
    lock: null,
    lock_digest: null,
    error: null,
    attempts: 0,
    lease_holder: "test",
    lease_until: now + 3_600_000,
    revision: null,
    accepted_at: now,
    updated_at: now,
    finished_at: null,
    deadline: now + 3_600_000,
    idempotency_key: null,
    copy: null,
    ...overrides,
  }));
  await server.ctx.db.insertInto("builds").values(rows).execute();
  return rows.map((r) => r.id);
}
