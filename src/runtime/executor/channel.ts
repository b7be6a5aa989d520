import type { KvWrite } from "../storage/index.ts";
import type { BindingCall, BindingReply } from "./internal-api/bindings.ts";
import type { CodeBundle } from "./internal-api/code-cache.ts";
import { ExecutorFault, type Capability, type ExecutorOutcome } from "./types.ts";
import { ChannelSocket } from "./websocket.ts";

/** One op call as it crosses the channel. */
export interface ChannelRun {
  /** `app:revision:secretsVersion`: the isolate it runs in. */
  key: string;
  appId: string;
  caps: readonly Capability[];
  /** Pushed with the isolate's first call in this process; otherwise the supervisor has it. */
  code: CodeBundle | null;
  op: string;
  invocation: string;
  headers: Record<string, string>;
  body: string;
  /** Bytes of KV writes the op may make without waiting for Node (write-behind); 0: none. */
  allowance?: number;
  /** Build the isolate and open its session, run no op (a new revision's warm-up). */
  warm?: boolean;
}

/** The call did not finish over the channel; the pool decides what that means for the process. */
export class ChannelError extends Error {
  constructor(
    readonly reason: "deadline" | "closed",
    message: string,
  ) {
    super(message);
    this.name = "ChannelError";
  }
}

interface Pending {
  resolve: (frame: Frame) => void;
  reject: (error: unknown) => void;
  timer: NodeJS.Timeout | null;
}

interface Frame {
  header: Record<string, unknown>;
  payload: Buffer;
}

const MAX_QUEUED_INVALIDATIONS = 1000;

// workerd refuses a received message over 32 MiB; our largest (a 10 MiB value) is far below.
const MAX_FRAME_BYTES = 32 * 1024 * 1024;

/**
 * Node's end of the WebSocket to one workerd process's supervisor. Every op call of that process
 * goes over it, and every binding call its apps make comes back over it, so neither side pays
 * for an HTTP request per call (see supervisor.worker.js for why that matters in workerd).
 * Frames are [u32 header length][header JSON][payload], in both directions.
 */
export class ExecutorChannel {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closedWith: unknown = null;
  private onIdle: (() => void) | null = null;
  /** [app, key, epoch]; a null key: every key of the app. */
  private invalidations: [string, string | null, number][] = [];
  /** Set when the whole cache must go: the epoch of the newest write it may have missed. */
  private staleAfter: number | null = null;
  /** Called once when the socket closes without close() having been called. */
  onClose: () => void = () => undefined;
  /** A binding call arrived from the process: its app's code is running and yielding. */
  onBinding: (invocation: string) => void = () => undefined;
  /**
   * An isolate's background work as its shim counts it (pending, and a sequence number that
   * orders reports of one isolate): with each result, and when it changes between calls.
   */
  onBackground: (key: string, appId: string, pending: number, seq: number) => void = () => undefined;

  private constructor(
    private readonly socket: ChannelSocket,
    private readonly bindings: (call: BindingCall) => Promise<BindingReply>,
  ) {
    socket.onMessage = (data) => this.receive(data);
    socket.onClose = () => {
      const first = this.closedWith === null;
      this.fail(new ChannelError("closed", "the executor channel closed"));
      if (first) this.onClose();
    };
  }

  static async open(socketPath: string, bindings: (call: BindingCall) => Promise<BindingReply>, timeoutMs: number): Promise<ExecutorChannel> {
    // Its own connection, held for the process's life; pings use another.
    return new ExecutorChannel(await ChannelSocket.connect(socketPath, "/__brickyard/channel", timeoutMs), bindings);
  }

  async run(call: ChannelRun, timeoutMs: number | undefined): Promise<ExecutorOutcome> {
    const { body, ...rest } = call;
    const { header, payload } = await this.request({ t: "run", ...rest }, body, timeoutMs);
    this.background(call.key, call.appId, header.bg);
    if (header.outcome === "warm") return { kind: "response", status: 204, contentType: "", body: "" };
    // The isolate could not be built because its code could not be read here: none of it ran.
    if (header.outcome === "unavailable") throw new ExecutorFault("unavailable", "not_started", "the app's code could not be loaded; try again");
    const bodyBytes = Number.isInteger(header.bodyBytes) && Number(header.bodyBytes) <= payload.length ? Number(header.bodyBytes) : payload.length;
    const text = payload.toString("utf8", 0, bodyBytes);
    // The output gate of write-behind: writes the op made without waiting commit before anyone
    // sees its result, and if they cannot, the result is an error (the refusal, in Operations).
    if (header.writes !== undefined) {
      const writes = writesOf(header.writes, payload.subarray(bodyBytes));
      const reply = await this.bindings({ invocation: call.invocation, appId: call.appId, path: "/kv/commit", payload: Buffer.alloc(0), writes });
      if (reply.status >= 300) return { kind: "threw", message: "CapabilityError: the operation's storage writes could not be committed", stack: "", logs: header.logs };
    }
    if (header.outcome === "threw") {
      return { kind: "threw", message: typeof header.message === "string" ? header.message : "the operation threw", stack: typeof header.stack === "string" ? header.stack : "", logs: header.logs };
    }
    return { kind: "response", status: Number(header.status), contentType: typeof header.contentType === "string" ? header.contentType : "", body: text, logs: header.logs };
  }

  /**
   * A committed KV write the process's read cache must drop. It rides on the next frame sent
   * here, which is before any op call that starts after it (a run is a frame too) and before the
   * writer's own reply; a separate message per write cost each process more than the write.
   */
  invalidate(appId: string, key: string | null, epoch: number): void {
    if (this.staleAfter !== null) {
      this.staleAfter = epoch;
      return;
    }
    this.invalidations.push([appId, key, epoch]);
    // A process nobody called for a while: drop its whole cache rather than queue without end.
    if (this.invalidations.length > MAX_QUEUED_INVALIDATIONS) {
      this.invalidations = [];
      this.staleAfter = epoch;
    }
  }

  /** Drops an isolate (abortIsolate inside it); resolves once the supervisor has let go of it. */
  async evict(key: string, timeoutMs: number): Promise<void> {
    await this.request({ t: "evict", key }, "", timeoutMs);
  }

  /** Fails every call still waiting with `error` (the pool's fault), and refuses new ones. */
  fail(error: unknown): void {
    this.closedWith ??= error;
    for (const p of this.pending.values()) {
      if (p.timer !== null) clearTimeout(p.timer);
      p.reject(error);
    }
    this.pending.clear();
  }

  /** Takes no new calls' answers past those in flight: closes once they are all answered. */
  closeWhenIdle(closed: () => void): void {
    this.onIdle = () => {
      this.close();
      closed();
    };
    if (this.pending.size === 0) this.onIdle();
  }

  close(): void {
    this.fail(new ChannelError("closed", "the executor channel was closed"));
    this.socket.close();
  }

  private request(header: Record<string, unknown>, payload: string, timeoutMs: number | undefined): Promise<Frame> {
    if (this.closedWith !== null) return Promise.reject(this.closedWith instanceof Error ? this.closedWith : new ChannelError("closed", "the executor channel closed"));
    const id = this.nextId++;
    return new Promise<Frame>((resolve, reject) => {
      const timer =
        timeoutMs === undefined
          ? null
          : setTimeout(() => {
              this.pending.delete(id);
              reject(new ChannelError("deadline", "the operation ran past its deadline"));
              if (this.onIdle !== null && this.pending.size === 0) this.onIdle();
            }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.send({ ...header, id }, payload);
      } catch (error) {
        this.pending.delete(id);
        if (timer !== null) clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  private send(header: Record<string, unknown>, payload: Buffer | string): void {
    if (this.invalidations.length > 0) header.kv = this.invalidations;
    if (this.staleAfter !== null) header.kvAll = this.staleAfter;
    const head = Buffer.from(JSON.stringify(header));
    const body = typeof payload === "string" ? Buffer.from(payload) : payload;
    // Refused before the queued invalidations count as sent: the next frame still carries them.
    if (4 + head.length + body.length > MAX_FRAME_BYTES) throw new Error("an executor channel frame is over 32 MiB");
    this.invalidations = [];
    this.staleAfter = null;
    const frame = Buffer.allocUnsafe(4 + head.length + body.length);
    frame.writeUInt32BE(head.length, 0);
    head.copy(frame, 4);
    body.copy(frame, 4 + head.length);
    this.socket.send(frame);
  }

  private receive(data: Buffer): void {
    const length = data.readUInt32BE(0);
    const header = JSON.parse(data.toString("utf8", 4, 4 + length)) as Record<string, unknown>;
    const payload = data.subarray(4 + length);
    if (header.t === "bg") {
      this.background(String(header.key), String(header.appId), header.bg);
      return;
    }
    if (header.t === "bind") {
      this.onBinding(typeof header.invocation === "string" ? header.invocation : "");
      this.bind(header, payload).catch(() => {
        // The answer could not be sent (over the frame cap): the app gets an error, not a hang.
        if (this.closedWith === null) this.send({ t: "reply", id: header.id, status: 502, contentType: "application/json" }, JSON.stringify({ ok: false, error: { kind: "capability_error", message: "the answer was too large to send" } }));
      });
      return;
    }
    const id = Number(header.id);
    const pending = this.pending.get(id);
    if (pending === undefined) return; // past its deadline: the caller has been answered already
    this.pending.delete(id);
    if (pending.timer !== null) clearTimeout(pending.timer);
    pending.resolve({ header, payload });
    if (this.onIdle !== null && this.pending.size === 0) this.onIdle();
  }

  private background(key: string, appId: string, bg: unknown): void {
    if (!Array.isArray(bg)) return;
    const [pending, seq] = bg as unknown[];
    if (Number.isInteger(pending) && Number.isInteger(seq)) this.onBackground(key, appId, Number(pending), Number(seq));
  }

  private async bind(header: Record<string, unknown>, payload: Buffer): Promise<void> {
    const str = (value: unknown) => (typeof value === "string" ? value : undefined);
    const reply = await this.bindings({
      invocation: str(header.invocation) ?? "",
      appId: str(header.appId) ?? "",
      path: str(header.path) ?? "",
      ...(str(header.key) === undefined ? {} : { key: str(header.key) }),
      ...(str(header.contentType) === undefined ? {} : { contentType: str(header.contentType) }),
      ...(header.writes === undefined ? {} : { writes: writesOf(header.writes, payload) }),
      payload,
    });
    if (this.closedWith !== null) return;
    this.send({ t: "reply", id: header.id, status: reply.status, contentType: reply.contentType, epoch: reply.epoch }, reply.body);
  }
}

/**
 * The KV writes a frame carries (write-behind): `listed` holds [key, byte length] pairs whose
 * values follow one another in `values`. Undefined when they do not add up.
 */
function writesOf(listed: unknown, values: Buffer): KvWrite[] | undefined {
  if (!Array.isArray(listed)) return undefined;
  const writes: KvWrite[] = [];
  let at = 0;
  for (const entry of listed as unknown[]) {
    if (!Array.isArray(entry)) return undefined;
    const [key, length] = entry as unknown[];
    if (typeof key !== "string" || !Number.isInteger(length) || Number(length) < 0 || at + Number(length) > values.length) return undefined;
    writes.push({ key, value: values.toString("utf8", at, at + Number(length)) });
    at += Number(length);
  }
  return at === values.length ? writes : undefined;
}
