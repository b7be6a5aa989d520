import { closeSync, openSync, readSync } from "node:fs";

/**
 * Whether any connection, in any process, may have committed to a WAL database since the last
 * look, from the wal-index header in the `-shm` file (https://www.sqlite.org/walformat.html,
 * "The WAL-Index Header"): every commit rewrites it (its change counter, frame count and
 * checksums), and a checkpoint that restarts the WAL changes its salt. One 96-byte read of the
 * page SQLite maps, ~0.5 µs, against a read transaction's two lock calls on that file for
 * `PRAGMA data_version`, which cost an op call tens of µs of wall time on a busy machine.
 *
 * The header is stored twice, the second copy written first; copies that differ are a commit
 * under way and count as a change. Only "no change" is trusted, and only when both copies match
 * the last ones seen, so a reader never skips a commit that was answered before it looked.
 */
export class CommitSignal {
  private readonly header = Buffer.alloc(2 * WAL_INDEX_HEADER_BYTES);
  private readonly seen = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  private known = false;
  private stable = false;

  private constructor(private readonly fd: number) {}

  /** Null when the file cannot be read (not in WAL mode): a reader then asks SQLite every time. */
  static open(path: string): CommitSignal | null {
    try {
      return new CommitSignal(openSync(path, "r"));
    } catch {
      return null;
    }
  }

  /**
   * Reads the header: true only when it is the same, in both copies, as when `settle` was last
   * called. On false, ask SQLite, then call `settle`: what SQLite answered covers the header read here.
   */
  unchanged(): boolean {
    const read = readSync(this.fd, this.header, 0, this.header.length, 0);
    const first = this.header.subarray(0, WAL_INDEX_HEADER_BYTES);
    this.stable = read === this.header.length && first.equals(this.header.subarray(WAL_INDEX_HEADER_BYTES));
    return this.stable && this.known && first.equals(this.seen);
  }

  /** The answer to the last `unchanged()` was read from SQLite after it: its header is now the one seen. */
  settle(): void {
    this.known = this.stable;
    if (this.stable) this.header.copy(this.seen, 0, 0, WAL_INDEX_HEADER_BYTES);
  }

  close(): void {
    closeSync(this.fd);
  }
}

const WAL_INDEX_HEADER_BYTES = 48;
