import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { HOUR } from "../config/clock.ts";
import { checkBlobKey, type BlobStore } from "./blob-store.ts";

/** Where deleted files wait, under the root, as `<deleted at ms>-<random>/<key>`. No key may start with it (pathOf). */
export const TRASH_DIR = ".trash";
/** How long a deleted file waits before the hourly sweep removes it: longer than a backup takes. */
export const TRASH_KEPT_MS = HOUR;

/**
 * Blobs as files under one directory (default `DATA_DIR/blobs`). A write goes to a temporary
 * file beside the target and is renamed over it, so a reader sees the old bytes or the new ones.
 * A delete moves the file into the trash rather than removing it: `brickyard backup` copies the
 * database and then the files, and a file deleted between the two (an asset replaced, an app
 * deleted) is one its copy of the database still names; it finds it there (start/backup.ts).
 */
export class FsBlobStore implements BlobStore {
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(key: string, data: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      await writeFile(temp, data, { flush: true });
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.pathOf(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.toTrash(key);
  }

  async deletePrefix(prefix: string): Promise<void> {
    await this.toTrash(prefix);
  }

  /** Removes what has waited in the trash longer than TRASH_KEPT_MS. */
  async sweepTrash(now = Date.now()): Promise<number> {
    let entries: string[];
    try {
      entries = await readdir(join(this.root, TRASH_DIR));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
      throw error;
    }
    const old = entries.filter((name) => Number(name.split("-")[0]) < now - TRASH_KEPT_MS);
    for (const name of old) await rm(join(this.root, TRASH_DIR, name), { recursive: true, force: true });
    return old.length;
  }

  /** Moves a file or folder into the trash in one rename (same filesystem); what is absent is no error. */
  private async toTrash(key: string): Promise<void> {
    const from = this.pathOf(key);
    const bin = join(this.root, TRASH_DIR, `${Date.now()}-${randomBytes(4).toString("hex")}`);
    const to = join(bin, checkBlobKey(key));
    await mkdir(dirname(to), { recursive: true });
    try {
      await rename(from, to);
    } catch (error) {
      await rm(bin, { recursive: true, force: true });
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }

  close(): void {
    // Nothing held between calls.
  }

  /** The file for `key`; the key check plus this containment check keep it inside the root. */
  private pathOf(key: string): string {
    if (key.split("/")[0] === TRASH_DIR) throw new Error(`blob key ${JSON.stringify(key)} names the trash`);
    const path = resolve(join(this.root, checkBlobKey(key)));
    if (!path.startsWith(this.root + sep)) throw new Error(`blob key ${JSON.stringify(key)} leaves the store`);
    return path;
  }
}
