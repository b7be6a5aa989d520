import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { checkBlobKey, type BlobStore } from "./blob-store.ts";

/**
 * Blobs as files under one directory (default `DATA_DIR/blobs`). A write goes to a temporary
 * file beside the target and is renamed over it, so a reader sees the old bytes or the new ones.
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
    await rm(this.pathOf(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<void> {
    await rm(this.pathOf(prefix), { recursive: true, force: true });
  }

  close(): void {
    // Nothing held between calls.
  }

  /** The file for `key`; the key check plus this containment check keep it inside the root. */
  private pathOf(key: string): string {
    const path = resolve(join(this.root, checkBlobKey(key)));
    if (!path.startsWith(this.root + sep)) throw new Error(`blob key ${JSON.stringify(key)} leaves the store`);
    return path;
  }
}
