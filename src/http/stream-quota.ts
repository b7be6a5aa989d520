import { apiError } from "../errors/index.ts";
import { addCount } from "../lib/counts.ts";
import { openFilesLimit } from "../config/open-files.ts";
import { NETWORK_SHARE } from "./rate-limit/network.ts";

/** Open event streams one holder (a signed-in person, or else a client address) may keep: a tab each. */
export const STREAMS_PER_HOLDER = 64;
/** Open event streams in all, at most: half the process's descriptors, so files and sockets remain. */
const STREAMS_IN_ALL_MAX = 10_000;

/**
 * Places for open event streams, per process. A stream is a socket held open for as long as its
 * client likes (pings keep it alive), and `GET /app/{id}/events` is open to anyone who may view
 * the app: without a bound, one client opening streams would take every file descriptor, and
 * then the store, workerd's sockets and every other client would fail. One holder keeps
 * `perHolder` streams at most (429 `too_many_requests`); one client network (clientNetwork) a
 * tenth of all, however many accounts it signs up as holders (429 too); and all of them `inAll`
 * (503 `service_busy`), whichever comes first.
 */
export class StreamQuota {
  private readonly held = new Map<string, number>();
  private readonly fromNetwork = new Map<string, number>();
  private open = 0;

  constructor(
    readonly perHolder = STREAMS_PER_HOLDER,
    readonly inAll = Math.min(STREAMS_IN_ALL_MAX, Math.floor(openFilesLimit() / 2)),
    readonly perNetwork = Math.max(perHolder, Math.floor(inAll / NETWORK_SHARE)),
  ) {}

  /** Streams open now. */
  get count(): number {
    return this.open;
  }

  /** Takes a place for one of `holder`'s streams from `network`, or throws; the returned function gives it back (once). */
  take(holder: string, network: string): () => void {
    const mine = this.held.get(holder) ?? 0;
    if (mine >= this.perHolder) {
      throw apiError("too_many_requests", `this client has ${mine} event streams open, the most it may; close one before opening another`);
    }
    const ours = this.fromNetwork.get(network) ?? 0;
    if (ours >= this.perNetwork) {
      throw apiError("too_many_requests", `this client's network has ${ours} event streams open, the most one network may; close some before opening another`);
    }
    if (this.open >= this.inAll) throw apiError("service_busy", "this instance holds as many event streams as it can; try again shortly");
    addCount(this.held, holder, 1);
    addCount(this.fromNetwork, network, 1);
    this.open += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open -= 1;
      addCount(this.held, holder, -1);
      addCount(this.fromNetwork, network, -1);
    };
  }

  /** Streams open now, and how many holders keep them. */
  get size(): { open: number; holders: number } {
    return { open: this.open, holders: this.held.size };
  }
}
