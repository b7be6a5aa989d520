import { copyFile, cp, mkdir, readdir } from "node:fs/promises";
import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import Database from "better-sqlite3";
import type { Config } from "../config/config.ts";
import { TRASH_DIR } from "../blobs/fs-store.ts";
import { KEY_FILE } from "../domain/secrets/key.ts";

/** What a backup wrote, for the command to print. */
export interface BackupReport {
  database: string;
  /** Blob files copied, or null when they live in a bucket (its own versioning keeps them). */
  blobs: number | null;
  secretsKey: boolean;
}

/** The whole of SQLite's backup in one step: a page count larger than any database. */
const ALL_PAGES = 0x7fffffff;

/**
 * `brickyard backup <dir>` (DECISIONS §16): a consistent copy of a running SQLite instance that
 * `brickyard serve` with DATA_DIR=<dir> starts from as it is. In order:
 * 1. the database, by SQLite's online backup API (better-sqlite3) in one step: it reads a
 *    snapshot while the server goes on writing (WAL), and a write between steps would restart it;
 * 2. the blob files: every blob a row of that snapshot names was written before its row
 *    committed, so it is there, or in the store's trash when it was deleted since (files written
 *    since are extra, and harmless);
 * 3. the secrets key, without which the secrets in the copy cannot be read.
 * On PostgreSQL there is nothing of ours to copy: it says what to use instead (pg_dump, the
 * bucket's versioning) and fails, so a script that meant to back up does not think it did.
 */
export async function backup(config: Config, target: string): Promise<BackupReport> {
  if (config.databaseUrl !== null) {
    throw new BackupRefused(
      "this instance keeps its data in PostgreSQL: back it up with pg_dump (or your provider's snapshots), and its blobs with the bucket's own versioning or replication; SECRETS_KEY must be kept with them",
    );
  }
  const source = join(config.dataDir, "brickyard.db");
  if (!existsSync(source)) throw new BackupRefused(`no database at ${source}: is DATA_DIR the running instance's?`);
  refuseTarget(config, target);
  if (existsSync(target) && (await readdir(target)).length > 0) throw new BackupRefused(`${target} is not empty: a backup goes into a new folder`);
  await mkdir(target, { recursive: true, mode: 0o700 });
  const database = join(target, "brickyard.db");
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    await db.backup(database, { progress: () => ALL_PAGES });
  } finally {
    db.close();
  }
  let blobs: number | null = null;
  if (config.blobStore.kind === "files") {
    // Where DATA_DIR keeps them when BLOB_STORE is unset, wherever they were: start the copy without BLOB_STORE.
    const from = config.blobStore.root;
    blobs = existsSync(from) ? await copyTree(from, join(target, "blobs")) : 0;
    blobs += await fromTrash(database, from, join(target, "blobs"));
  }
  let secretsKey = false;
  if (config.secretsKey === null && existsSync(join(config.dataDir, KEY_FILE))) {
    await copyFile(join(config.dataDir, KEY_FILE), join(target, KEY_FILE));
    secretsKey = true;
  }
  return { database, blobs, secretsKey };
}

/**
 * A file where the folder should be failed with a bare ENOTDIR, and a folder inside what is
 * copied (the data directory, the blob folder) made the blob copy fail after the database was
 * written, leaving half a backup: both are refused before anything is written.
 */
function refuseTarget(config: Config, target: string): void {
  if (existsSync(target) && !statSync(target).isDirectory()) throw new BackupRefused(`${target} is a file: a backup goes into a new folder`);
  const inside = (folder: string) => {
    const from = relative(resolve(folder), resolve(target));
    return from === "" || (!from.startsWith("..") && !isAbsolute(from));
  };
  const copied = [config.dataDir, ...(config.blobStore.kind === "files" ? [config.blobStore.root] : [])];
  const within = copied.find(inside);
  if (within !== undefined) throw new BackupRefused(`${target} is inside ${within}, which the backup copies: put it in a folder of its own, outside the data directory`);
}

/** The backup was not taken, for a reason the operator can act on. */
export class BackupRefused extends Error {}

async function copyTree(from: string, to: string): Promise<number> {
  const trash = join(from, TRASH_DIR);
  await cp(from, to, { recursive: true, errorOnExist: false, force: true, filter: (path) => path !== trash });
  return (await readdir(to, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).length;
}

/**
 * The files the copied database names that the tree no longer held: deleted (an asset replaced,
 * an app deleted) after the database was copied and before the tree was. The store keeps deleted
 * files an hour in its trash (fs-store.ts); each is taken from there. Returns how many.
 */
async function fromTrash(database: string, root: string, to: string): Promise<number> {
  const db = new Database(database, { readonly: true, fileMustExist: true });
  let named: string[];
  try {
    named = (db.prepare("select blob_key from assets").all() as { blob_key: string }[]).map((row) => row.blob_key);
  } finally {
    db.close();
  }
  const missing = named.filter((key) => !existsSync(join(to, key)));
  if (missing.length === 0) return 0;
  const trash = join(root, TRASH_DIR);
  const bins = existsSync(trash) ? await readdir(trash) : [];
  let found = 0;
  for (const key of missing) {
    const bin = bins.find((name) => existsSync(join(trash, name, key)));
    if (bin === undefined) continue;
    await mkdir(dirname(join(to, key)), { recursive: true });
    await copyFile(join(trash, bin, key), join(to, key));
    found += 1;
  }
  return found;
}
