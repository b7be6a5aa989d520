import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_STATUS } from "../src/errors/index.ts";
import { LogCapture } from "./helpers/logs.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// The spec's list of error kinds, with their statuses, as docs/errors.md (the page for API users)
// gives them: one table per status under a `## NNN` heading. The registry must hold exactly those.
const DOC_PATH = fileURLToPath(new URL("../docs/errors.md", import.meta.url));
const DOC_KINDS: { kind: string; status: number }[] = (() => {
  const out: { kind: string; status: number }[] = [];
  let status: number | null = null;
  for (const line of readFileSync(DOC_PATH, "utf8").split("\n")) {
    const heading = /^## (\d{3})$/.exec(line) ?? (/^## /.test(line) ? [] : null);
    if (heading !== null) status = heading[1] === undefined ? null : Number(heading[1]);
    const row = /^\| `([a-z_]+)` \|/.exec(line);
    if (status !== null && row?.[1] !== undefined) out.push({ kind: row[1], status });
  }
  return out;
})();
const SPEC_KINDS = [...new Set(DOC_KINDS.map((d) => d.kind))].filter((kind) => kind !== "internal_error");

const SPEC_STATUS_TABLE: Record<number, string[]> = {
  400: ["description_too_long", "secret_too_large", "invalid_interval", "invalid_input", "asset_invalid_key", "asset_invalid_content_type"],
  401: ["unauthorized"],
  403: ["forbidden_write", "webhook_disabled"],
  409: ["duplicate_remix", "manifest_id_immutable", "manifest_id_conflict", "idempotency_conflict", "secret_already_exists"],
  412: ["revision_mismatch", "invalid_if_match"],
  413: ["module_too_large", "ui_too_large", "text_too_large", "structured_data_too_large", "payload_too_large", "edits_too_large", "asset_too_large", "asset_count_exceeded", "asset_quota_exceeded", "stored_value_too_large", "storage_full"],
  422: ["contract_migration_required"],
  428: ["precondition_required"],
  429: ["rate_limited", "too_many_requests", "app_busy", "routine_limit_exceeded", "webhook_limit_exceeded"],
};

describe("error registry", () => {
  it("holds every spec kind, and nothing but the spec's kinds plus internal_error", () => {
    expect(SPEC_KINDS.length).toBeGreaterThan(100);
    for (const kind of SPEC_KINDS) expect(ERROR_STATUS, kind).toHaveProperty(kind);
    expect(Object.keys(ERROR_STATUS).filter((k) => !SPEC_KINDS.includes(k))).toEqual(["internal_error"]);
  });

  it("answers each kind with the status docs/errors.md gives it (operation_failed under both of its own)", () => {
    for (const { kind, status } of DOC_KINDS) {
      if (kind === "operation_failed") expect([422, 500], kind).toContain(status);
      else expect(ERROR_STATUS[kind as keyof typeof ERROR_STATUS], kind).toBe(status);
    }
    expect(DOC_KINDS.filter((d) => d.kind === "operation_failed").map((d) => d.status)).toEqual([422, 500]);
  });

  it("gives each kind the status of the spec's table", () => {
    for (const [status, kinds] of Object.entries(SPEC_STATUS_TABLE)) {
      for (const kind of kinds) expect(ERROR_STATUS[kind as keyof typeof ERROR_STATUS], kind).toBe(Number(status));
    }
  });
});

describe("error envelope over HTTP", () => {
  let server: TestServer;
  const logs = new LogCapture();
  beforeAll(async () => {
    server = await startServer({ logStream: logs });
  });
  afterAll(async () => server.close());

  it("404 not_found for an unknown route", async () => {
    const res = await server.client.get("/no/such/route");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ ok: false, error: { kind: "not_found", message: expect.any(String) } });
  });

  it("405 method_not_allowed with Allow for a known path", async () => {
    const res = await server.client.delete("/api/me");
    expect(res.status).toBe(405);
    expect(res.body.error.kind).toBe("method_not_allowed");
    expect(res.headers.get("allow")).toContain("GET");
    const tokenPath = await server.client.put("/api/token/00000000-0000-4000-8000-000000000000");
    expect(tokenPath.status).toBe(405);
    expect(tokenPath.headers.get("allow")).toBe("DELETE");
  });

  it("400 invalid_request for a body that is not JSON, the wrong type, missing or unknown fields", async () => {
    const cases: [unknown, string | undefined][] = [
      [undefined, "{not json"],
      [undefined, "[1,2]"],
      [{ login: 5, password: "x" }, undefined],
      [{ login: "someone" }, undefined],
      [{ login: "someone", password: "x", remember: true }, undefined],
    ];
    for (const [body, raw] of cases) {
      const res = await server.client.post("/api/auth/login", body, raw === undefined ? {} : { raw });
      expect(res.status, raw ?? JSON.stringify(body)).toBe(400);
      expect(res.body.ok).toBe(false);
      expect(res.body.error.kind).toBe("invalid_request");
    }
    const missing = await server.client.post("/api/auth/login", { login: "someone" });
    expect(missing.body.error.message).toContain("password");
    const unsupported = await server.client.post("/api/auth/login", undefined, { raw: "login=a", headers: { "content-type": "text/plain" } });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.kind).toBe("invalid_request");
  });

  it("413 payload_too_large with a shrink recovery for an oversized body", async () => {
    const res = await server.client.post("/api/auth/login", { login: "x".repeat(5 * 1024 * 1024), password: "x" });
    expect(res.status).toBe(413);
    expect(res.body.error.kind).toBe("payload_too_large");
    expect(res.body.error.recovery).toMatchObject({ kind: "shrink", field: "payload", cap_bytes: 4 * 1024 * 1024 });
  });

  it("500 internal_error that leaks nothing, logged with its request id", async () => {
    const local = new LogCapture();
    const broken = await startServer({ logStream: local });
    try {
      await broken.ctx.store.close();
      const res = await broken.client.post("/api/auth/login", { login: "someone", password: "secret" });
      expect(res.status).toBe(500);
      expect(res.body.error.kind).toBe("internal_error");
      expect(res.text).not.toMatch(/driver|kysely|stack|\.ts/i);
      const requestId = res.body.error.details.requestId;
      expect(res.headers.get("x-request-id")).toBe(requestId);
      const logged = local.lines().find((line) => line.msg === "unexpected error");
      expect(logged?.requestId).toBe(requestId);
      expect(JSON.stringify(logged)).toContain("driver has already been destroyed");
    } finally {
      await broken.http.close().catch(() => undefined);
    }
  });
});
