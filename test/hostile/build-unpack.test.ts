import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGzip, gzipSync } from "node:zlib";
import * as tar from "tar";
import { afterAll, describe, expect, it } from "vitest";
import { UNPACKED_CAP_BYTES, unpackTarball } from "../../src/domain/builds/unpack.ts";

const MiB = 1024 * 1024;

function header(path: string, type: string, size: number): Buffer {
  const block = Buffer.alloc(512);
  new tar.Header({ path, type: type as never, size, mode: 0o644, mtime: new Date(0), uid: 0, gid: 0 }).encode(block, 0);
  return block;
}

/** gzip of `head` and then `zeros` bytes of zeros, streamed: a small tarball that inflates far. */
async function gzipWithZeros(head: Buffer, zeros: number): Promise<Buffer> {
  const z = createGzip({ level: 9 });
  const out: Buffer[] = [];
  z.on("data", (c: Buffer) => out.push(c));
  const ended = new Promise((resolve) => z.on("end", resolve));
  z.write(head);
  const chunk = Buffer.alloc(MiB);
  for (let left = zeros; left > 0; left -= chunk.length) {
    if (!z.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) await new Promise((resolve) => z.once("drain", resolve));
  }
  z.end();
  await ended;
  return Buffer.concat(out);
}

/** A package's tarball is the registry's, so hostile: what it unpacks to is capped, all of it. */
describe("hostile: unpacking a package", () => {
  const dir = mkdtempSync(join(tmpdir(), "brickyard-unpack-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const unpack = (tgz: Buffer, name: string, budget = { used: 0 }) =>
    unpackTarball(tgz, join(dir, name), budget, `${name}@1.0.0`).then(
      () => "unpacked",
      (error: Error) => error.message,
    );

  it("an entry the unpack drops (a device) counts its declared body: 200 MiB of it is refused before it is inflated", async () => {
    const pj = Buffer.from(JSON.stringify({ name: "bomb", version: "1.0.0" }));
    const head = Buffer.concat([header("package/package.json", "File", pj.length), pj, Buffer.alloc(512 - pj.length), header("package/dev", "CharacterDevice", 200 * MiB)]);
    const tgz = await gzipWithZeros(head, 200 * MiB + 1024);
    expect(tgz.length).toBeLessThan(MiB);
    expect(await unpack(tgz, "bomb")).toBe(`the packages unpack to more than ${UNPACKED_CAP_BYTES / MiB} MiB`);
  });

  it("folders and empty files cost a disk block each: a tarball of nothing but folders meets the cap", async () => {
    const parts: Buffer[] = [];
    for (let i = 0; i < 1000; i++) parts.push(header(`package/d/${i}/`, "Directory", 0));
    parts.push(Buffer.alloc(1024));
    // As the last package of a graph that used all but 100 blocks' worth of the cap.
    const budget = { used: UNPACKED_CAP_BYTES - 100 * 4096 };
    expect(await unpack(gzipSync(Buffer.concat(parts)), "folders", budget)).toBe(`the packages unpack to more than ${UNPACKED_CAP_BYTES / MiB} MiB`);
    const made = existsSync(join(dir, "folders", "d")) ? readdirSync(join(dir, "folders", "d")).length : 0;
    expect(made).toBeLessThanOrEqual(100);
  });
});
