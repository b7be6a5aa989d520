import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { KEY_FILE } from "../src/domain/secrets/key.ts";
import { createUser } from "./helpers/accounts.ts";
import { startServer } from "./helpers/server.ts";

const MODULE = `export const manifest = { id: "keyed", routes: { peek: { access: "read" } } };
export default { async fetch(request, env) { return Response.json({ ok: true, value: env.API_KEY ?? null }); } };`;

/**
 * A copy of a SQLite instance started without the key that sealed its secrets (a backup restored
 * without SECRETS_KEY, a key file lost) got a freshly generated key: every app with secrets then
 * failed its op calls with a vague 503, and new secrets were sealed under the second key. The
 * service now refuses to start with a key that does not open the secrets it holds.
 */
describe("the secrets key at start", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "brickyard-secrets-key-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("a key that does not open the stored secrets stops the start, saying which key to bring; the right one starts it", async () => {
    const first = await startServer({ env: { DATA_DIR: dataDir } });
    const owner = await createUser(first);
    const created = await first.client.post("/app", { module: MODULE }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const appId = created.body.id as string;
    expect((await first.client.post(`/app/${appId}/secrets`, { name: "API_KEY", value: "sk_live_kept" }, { token: owner.token })).status).toBe(201);
    await first.close();

    const keyFile = join(dataDir, KEY_FILE);
    const key = readFileSync(keyFile, "utf8");
    unlinkSync(keyFile);
    await expect(startServer({ env: { DATA_DIR: dataDir } })).rejects.toThrow(/does not open the secrets this database holds/);
    await expect(startServer({ env: { DATA_DIR: dataDir, SECRETS_KEY: Buffer.alloc(32, 7).toString("base64") } })).rejects.toThrow(/does not open the secrets/);

    writeFileSync(keyFile, key, { mode: 0o600 });
    const again = await startServer({ env: { DATA_DIR: dataDir } });
    try {
      expect((await again.client.post(`/app/${appId}/api/peek`, {}, { token: owner.token })).body).toEqual({ ok: true, value: "sk_live_kept" });
    } finally {
      await again.close();
    }
  });
});
