import { DAY, HOUR } from "../../config/clock.ts";
import { apiError } from "../../errors/index.ts";

/** The spec's intervals; hourly is the floor (Limits: "Routine interval floor"). */
export const INTERVAL_MS = { hourly: HOUR, daily: DAY, weekly: 7 * DAY } as const;
export type Interval = keyof typeof INTERVAL_MS;

export function parseInterval(value: string): Interval {
  if (Object.hasOwn(INTERVAL_MS, value)) return value as Interval;
  throw apiError("invalid_interval", `interval must be one of hourly, daily or weekly (hourly is the shortest); got "${value}"`);
}

/**
 * The slot after `previous` once a tick ran at `now` (DECISIONS §8): previous + interval, skipping
 * every slot already in the past, so a service that was down does not replay a backlog.
 */
export function nextSlot(previous: number, intervalMs: number, now: number): { next: number; missed: number } {
  const steps = previous > now ? 1 : Math.floor((now - previous) / intervalMs) + 1;
  return { next: previous + steps * intervalMs, missed: steps - 1 };
}
