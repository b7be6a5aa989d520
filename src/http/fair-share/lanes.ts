/**
 * One lane per principal for the control plane's unmetered writes (spec: app create and update
 * calls are not metered). A lane runs one request at a time, in arrival order, and rests after
 * each for `restFactor` times as long as it took (at most `maxRestMs`), so one principal's writes
 * hold Node's thread for at most 1 / (1 + restFactor) of the time however many connections they
 * come on. Measured (`npm run bench`, write-share row): while one owner wrote from 8 connections,
 * a neighbour's op calls were answered 134 times a second against 1,335 alone; with lanes, 806-870
 * against 1,228-1,273, the owner's writes 182-196 a second.
 */
export interface LaneOptions {
  /** Rest after a request, as a multiple of its duration. */
  restFactor: number;
  maxRestMs: number;
  now: () => number;
  /** Runs `wake` after `ms` (a timer the process does not wait on to exit). */
  after: (ms: number, wake: () => void) => void;
}

interface Waiting {
  start: () => void;
  refuse: (error: NotAdmitted) => void;
}

interface Lane {
  running: boolean;
  resting: boolean;
  /** Waiting requests, oldest first. */
  queue: Waiting[];
}

/** One request's place in its lane: `admitted` settles when it may run; `leave` ends its turn. */
export interface Ticket {
  readonly admitted: Promise<void>;
  /** The request is over (answered, or its client went away). Idempotent. */
  leave: () => void;
}

/** Why a waiting request will not run: its client went away, or the server is closing. */
export class NotAdmitted extends Error {}

const DEFAULT_LANE_OPTIONS: LaneOptions = {
  restFactor: 2,
  maxRestMs: 250,
  now: () => performance.now(),
  after: (ms, wake) => void setTimeout(wake, Math.ceil(ms)).unref(),
};

export class PrincipalLanes {
  private readonly lanes = new Map<string, Lane>();
  private closed = false;

  constructor(private readonly options: LaneOptions = DEFAULT_LANE_OPTIONS) {}

  /** Queues a request in `key`'s lane. A lane that is free and rested admits it at once. */
  enter(key: string): Ticket {
    if (this.closed) return { admitted: Promise.resolve(), leave: () => undefined };
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { running: false, resting: false, queue: [] };
      this.lanes.set(key, lane);
    }
    const owner = lane;
    let state: "waiting" | "running" | "left" = "waiting";
    let startedAt = 0;
    let entry!: Waiting;
    const admitted = new Promise<void>((resolve, reject) => {
      entry = {
        start: () => {
          state = "running";
          startedAt = this.options.now();
          resolve();
        },
        refuse: (error) => {
          state = "left";
          reject(error);
        },
      };
    });
    const leave = () => {
      if (state === "left") return;
      if (state === "running") {
        state = "left";
        owner.running = false;
        this.rest(key, owner, this.options.now() - startedAt);
        return;
      }
      // Gone before its turn: its place is given up, and it must not run ungated.
      owner.queue.splice(owner.queue.indexOf(entry), 1);
      entry.refuse(new NotAdmitted("the client went away while its request waited for its turn"));
      this.forgetIfIdle(key, owner);
    };
    owner.queue.push(entry);
    this.next(owner);
    return { admitted, leave };
  }

  /**
   * The server is closing: requests still waiting are refused now rather than run one by one
   * with rests between (a flooder's queue would otherwise hold the shutdown for as long as its
   * turns take); later ones run at once.
   */
  close(): void {
    this.closed = true;
    for (const [key, lane] of this.lanes) {
      for (const waiting of lane.queue.splice(0)) waiting.refuse(new NotAdmitted("the server is shutting down; retry, another instance or the restarted one will answer"));
      this.forgetIfIdle(key, lane);
    }
  }

  /** Lanes with a request running, waiting or resting (it drains to 0). */
  get size(): number {
    return this.lanes.size;
  }

  /** Requests waiting for their turn, in every lane. */
  get waiting(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.queue.length;
    return n;
  }

  private rest(key: string, lane: Lane, tookMs: number): void {
    const ms = Math.min(tookMs * this.options.restFactor, this.options.maxRestMs);
    if (ms < 1) {
      this.next(lane);
      this.forgetIfIdle(key, lane);
      return;
    }
    lane.resting = true;
    const until = this.options.now() + ms;
    const wake = () => {
      // A timer counts from the loop's cached time, so it may fire a little early: rest the rest.
      const left = until - this.options.now();
      if (left > 0) return this.options.after(left, wake);
      lane.resting = false;
      this.next(lane);
      this.forgetIfIdle(key, lane);
    };
    this.options.after(ms, wake);
  }

  private next(lane: Lane): void {
    if (lane.running || lane.resting) return;
    const waiting = lane.queue.shift();
    if (waiting === undefined) return;
    lane.running = true;
    waiting.start();
  }

  private forgetIfIdle(key: string, lane: Lane): void {
    if (!lane.running && !lane.resting && lane.queue.length === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }
}
