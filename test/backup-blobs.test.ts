import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as FsPromises from "node:fs/promises";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FsBlobStore, TRASH_DIR, TRASH_KEPT_MS } from "../src/blobs/fs-store.ts";
import { makeUser, type FixtureUser } from "./helpers/apps.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

// What the running server does between the backup's copy of the database and its copy of the
// blob tree, run just before the tree is copied (on a real instance that copy takes minutes).
const between: { run: (() => Promise<void>) | null } = { run: null };
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  const cp: typeof real.cp = async (...args: Parameters<typeof real.cp>) => {
    const hook = between.run;
    between.run = null;
    if (hook !== null) await hook();
    return real.cp(...args);
  };
  return { ...real, default: { ...real, cp }, cp };
});

const { backup } = await import("../src/start/backup.ts");

const MODULE = (id: string) => `export const manifest = { id: ${JSON.stringify(id)}, routes: { a: { access: "read" } } };
export default { async fetch() { return Response.json({ ok: true, value: 1 }); } };`;

/**
 * A backup copies the database, then the blob files. An asset replaced or an app deleted between
 * the two removed files the copied database still names: the copy served 404s for them. Deleted
 * files now wait an hour in the store's trash, and the backup takes the ones its database names.
 */
describe("backup of blob files deleted while it runs", () => {
  let server: TestServer;
  let owner: FixtureUser;
  const scratch = mkdtempSync(join(tmpdir(), "brickyard-backup-blobs-"));

  beforeAll(async () => {
    server = await startServer();
    owner = await makeUser(server);
  });
  afterAll(async () => {
    await server.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const createApp = async (id: string) => {
    const created = await server.client.post("/app", { module: MODULE(id) }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };
  /** The blob file the copy's database names for the app's asset, and whether the copy holds it. */
  const copied = (target: string, appId: string, key: string) => {
    const db = new Database(join(target, "brickyard.db"), { readonly: true });
    const row = db.prepare("select blob_key from assets where app_id = ? and key = ?").get(appId, key) as { blob_key: string } | undefined;
    db.close();
    expect(row).toBeDefined();
    const file = join(target, "blobs", row?.blob_key ?? "");
    return existsSync(file) ? readFileSync(file, "utf8") : null;
  };

  it("an asset replaced, and an app deleted, after the database was copied: the copy holds the bytes its database names, and no trash", async () => {
    const replaced = await createApp("replaced");
    const deleted = await createApp("deleted");
    await server.ctx.assets.put(replaced, "logo.png", "image/png", Buffer.from("first bytes"));
    await server.ctx.assets.put(deleted, "a.png", "image/png", Buffer.from("doomed bytes"));
    between.run = async () => {
      await server.ctx.assets.put(replaced, "logo.png", "image/png", Buffer.from("second bytes"));
      expect((await server.client.delete(`/app/${deleted}`, { token: owner.token })).status).toBe(200);
    };
    const target = join(scratch, "copy");
    const report = await backup(server.config, target);
    expect(between.run).toBeNull();
    expect(copied(target, replaced, "logo.png")).toBe("first bytes");
    expect(copied(target, deleted, "a.png")).toBe("doomed bytes");
    expect(existsSync(join(target, "blobs", TRASH_DIR))).toBe(false);
    // The new logo, written after the database was copied (extra, and harmless), and the two from the trash.
    expect(report.blobs).toBe(3);
  });

  it("the trash is emptied an hour after each deletion, not before", async () => {
    const appId = await createApp("swept");
    await server.ctx.assets.put(appId, "x.png", "image/png", Buffer.from("x"));
    expect(await server.ctx.assets.delete(appId, "x.png")).toBe(true);
    const root = server.config.blobStore.kind === "files" ? server.config.blobStore.root : "";
    const bins = () => (existsSync(join(root, TRASH_DIR)) ? readdirSync(join(root, TRASH_DIR)).length : 0);
    expect(bins()).toBeGreaterThan(0);
    const store = new FsBlobStore(root);
    expect(await store.sweepTrash(Date.now())).toBe(0);
    expect(await store.sweepTrash(Date.now() + TRASH_KEPT_MS + 1_000)).toBeGreaterThan(0);
    expect(bins()).toBe(0);
    // The scheduler's job is wired to the same sweep.
    expect(server.ctx.blobTrash).not.toBeNull();
  });
});
