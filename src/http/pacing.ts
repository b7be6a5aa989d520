import type { FastifyRequest } from "fastify";
import type { App } from "./types.ts";

/**
 * Fair turns on the event loop. A request that needs no real I/O (a refused op call: token and
 * app read from SQLite, input checked, error sent) runs from routing to reply without yielding,
 * about a millisecond. Fifty of them arriving in one socket read used to run back to back, and
 * /healthz or another app's call arriving meanwhile waited the whole 50 ms.
 *
 * So handlers start in turns: each turn of the loop admits at most PER_TURN waiting requests,
 * taking one from each app's queue in rotation, and the loop polls sockets between turns. A
 * burst at one app costs that app's calls their place in line, not everyone else's: the victim's
 * call and /healthz are admitted in the next turn. A lone request waits one setImmediate.
 */
const PER_TURN = 4;

/** The queue a request waits in: the app it addresses, or the control plane's shared one. */
function laneOf(request: FastifyRequest): string {
  const params = request.params as Record<string, unknown> | undefined;
  const app = params?.["appId"] ?? params?.["id"];
  return typeof app === "string" ? `app:${app}` : request.routeOptions.url === "/healthz" ? "health" : "control";
}

export class TurnPacer {
  // Insertion order is the rotation.
  private readonly lanes = new Map<string, (() => void)[]>();
  private scheduled = false;

  constructor(private readonly perTurn = PER_TURN) {}

  /** Resolves when it is this lane's turn. */
  wait(lane: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.lanes.get(lane);
      if (queue === undefined) this.lanes.set(lane, [resolve]);
      else queue.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.turn);
      }
    });
  }

  get waiting(): number {
    let n = 0;
    for (const queue of this.lanes.values()) n += queue.length;
    return n;
  }

  private readonly turn = (): void => {
    let admitted = 0;
    // A lane served goes to the back; Map iteration visits it again after the others.
    for (const [lane, queue] of this.lanes) {
      if (admitted === this.perTurn) break;
      this.lanes.delete(lane);
      queue.shift()?.();
      admitted++;
      if (queue.length > 0) this.lanes.set(lane, queue);
    }
    // The admitted handlers run as this callback's microtasks; the rest wait for a later turn,
    // after the loop has polled sockets again.
    if (this.lanes.size > 0) setImmediate(this.turn);
    else this.scheduled = false;
  };
}

export function installPacing(app: App, pacer = new TurnPacer()): void {
  app.addHook("preValidation", (request) => pacer.wait(laneOf(request)));
}
