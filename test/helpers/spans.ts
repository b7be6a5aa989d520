import { expect } from "vitest";

/** When one call of an instrumented method ran, and for whom. */
export interface Span {
  who: string;
  start: number;
  end: number;
}

/**
 * Records when each call of `object`'s methods ran (instrumentation, not a mock: the real method
 * runs), naming its caller with that method's `who`, which reads the call's arguments.
 */
export function recordSpans<T extends object>(object: T, who: Partial<Record<keyof T & string, (args: unknown[]) => string>>): { spans: Span[]; restore: () => void } {
  const spans: Span[] = [];
  const methods = object as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const originals = Object.entries(who).map(([name, label]) => ({ name, label: label as (args: unknown[]) => string, original: methods[name] }));
  for (const { name, label, original } of originals) {
    if (original === undefined) throw new Error(`no method ${name} to record`);
    methods[name] = async (...args: unknown[]) => {
      const start = performance.now();
      try {
        return await original.apply(object, args);
      } finally {
        spans.push({ who: label(args), start, end: performance.now() });
      }
    };
  }
  return {
    spans,
    restore: () => {
      for (const { name, original } of originals) if (original !== undefined) methods[name] = original;
    },
  };
}

/** Each span after the first starts once the one before it ended and its lane rested (2× its length, at most 250 ms). */
export function expectOneAtATimeWithRests(spans: Span[]): void {
  const sorted = [...spans].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    const before = sorted[i - 1] as Span;
    const span = sorted[i] as Span;
    // The lane times the whole request, which holds the domain call: its rest is at least this
    // long (1 ms allowed for the two clocks' readings).
    const rest = Math.min(2 * (before.end - before.start), 250);
    expect(span.start, `call ${i} of ${sorted.length}`).toBeGreaterThanOrEqual(before.end + rest - 1);
  }
}
