import { mkdir } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { BuildError } from "./build-error.ts";

export const UNPACKED_CAP_BYTES = 100 * 1024 * 1024;

const KEPT_TYPES = new Set(["File", "OldFile", "ContiguousFile", "Directory"]);
/**
 * What an entry costs at least, whatever it declares: a folder or an empty file takes a block on
 * disk (and an inode), and 40,000 of them fit in a 188 KB tarball.
 */
const ENTRY_MIN_BYTES = 4096;

/** Bytes unpacked so far across one build's packages (the cap is per graph). */
export interface UnpackBudget {
  used: number;
}

/**
 * Unpacks a package tarball into `dir`, keeping only regular files and directories: symlinks,
 * hard links and devices are dropped, and tar itself refuses absolute paths and `..` segments
 * (its defaults, which we do not loosen). The archive's top folder (`package/`) is stripped.
 * Nothing in the package runs: install scripts are never looked at.
 */
export async function unpackTarball(tarball: Buffer, dir: string, budget: UnpackBudget, what: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  // Imported here, not at start: builds are rare.
  const tar = await import("tar");
  let overCap = false;
  const unpack = tar.x({
    cwd: dir,
    strip: 1,
    // Files land with owner-only permissions whatever the archive says; nothing is executable.
    dmode: 0o700,
    fmode: 0o600,
    noChmod: true,
    preservePaths: false,
    filter: (_path, entry) => {
      // Every entry counts, the dropped ones too: tar inflates a device's declared body to skip it.
      budget.used += Math.max(entry.size ?? 0, ENTRY_MIN_BYTES);
      if (budget.used > UNPACKED_CAP_BYTES && !overCap) {
        overCap = true;
        // Stop inflating now rather than read the rest of the archive only to drop it.
        unpack.abort(new Error("over the cap"));
      }
      const type = "type" in entry ? entry.type : "File";
      return !overCap && KEPT_TYPES.has(type);
    },
  });
  try {
    await pipeline(Readable.from([tarball]), unpack);
  } catch (error) {
    if (!overCap) throw new BuildError("app_build_failed", `${what}'s tarball does not unpack: ${(error as Error).message}`);
  }
  if (overCap) throw new BuildError("app_build_failed", `the packages unpack to more than ${UNPACKED_CAP_BYTES / 1024 / 1024} MiB`);
}
