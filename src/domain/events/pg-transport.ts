import type { Logger } from "pino";
import { NOTIFY_PAYLOAD_MAX, type PgNotifier } from "../../store/notify.ts";
import type { LiveEvent, LiveEvents, LiveTransport } from "./live-events.ts";

interface Wire {
  a: string;
  e: LiveEvent;
}

/** Live events between instances over PostgreSQL NOTIFY; starts listening before it returns. */
export async function pgLiveTransport(live: LiveEvents, notifier: PgNotifier, log: Logger): Promise<LiveTransport> {
  await notifier.listen((payload) => {
    try {
      const wire = JSON.parse(payload) as Wire;
      live.deliver(wire.a, wire.e);
    } catch (error) {
      log.warn({ err: error }, "live events: unreadable notification");
    }
  });
  return {
    send(appId, event) {
      for (const payload of encode(appId, event)) {
        notifier.notify(payload).catch((error: unknown) => log.warn({ err: error, appId }, "live events: NOTIFY failed"));
      }
    },
    close: () => notifier.close(),
  };
}

/** One payload per event, except a `data` event too large for NOTIFY, which is split by keys. */
export function encode(appId: string, event: LiveEvent): string[] {
  const whole = JSON.stringify({ a: appId, e: event } satisfies Wire);
  if (whole.length <= NOTIFY_PAYLOAD_MAX || event.type !== "data") return [whole];
  const out: string[] = [];
  let keys: string[] = [];
  const flush = () => {
    if (keys.length > 0) out.push(JSON.stringify({ a: appId, e: { type: "data", keys } } satisfies Wire));
    keys = [];
  };
  for (const key of event.keys) {
    // Keys are at most 512 bytes, so one always fits.
    if (JSON.stringify({ a: appId, e: { type: "data", keys: [...keys, key] } }).length > NOTIFY_PAYLOAD_MAX) flush();
    keys.push(key);
  }
  flush();
  return out;
}
