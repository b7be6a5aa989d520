// A neighbour's op calls while one client floods unmetered requests from many connections (an
// owner writing an app's source, or anyone reading a large answer), against the same calls alone,
// in interleaved slices. App creates, updates and reads are not metered (spec: rate limits); what
// keeps the neighbour served is the flooder's lane (src/http/fair-share).
import { LoadClient, percentile, SLICE_MS, type Target } from "./measure.ts";

export interface FloodShare {
  alone: { rps: number; p50: number };
  flooded: { rps: number; p50: number };
  /** The flood's requests answered a second during the flooded slices. */
  floodPerSecond: number;
}

/**
 * `neighbour` is called from one connection, as one agent would; `flood` comes from `connections`
 * connections of a second client process. Both clients are other processes than the server's.
 */
export async function floodShare(neighbourClient: LoadClient, neighbour: Target, flood: Target[], options: { connections: number; msPerRow: number }): Promise<FloodShare> {
  const flooder = LoadClient.start();
  try {
    const alone: number[] = [];
    const flooded: number[] = [];
    let aloneMs = 0;
    let floodedMs = 0;
    let answered = 0;
    // One unmeasured slice of each first, as measure() does.
    await flooder.run({ targets: flood, concurrency: options.connections, ms: SLICE_MS });
    for (let i = 0; i < Math.ceil(options.msPerRow / SLICE_MS); i++) {
      const quiet = await neighbourClient.run({ targets: [neighbour], concurrency: 1, ms: SLICE_MS });
      alone.push(...quiet.latencies);
      aloneMs += quiet.elapsedMs;
      const [flooding, calls] = await Promise.all([
        flooder.run({ targets: flood, concurrency: options.connections, ms: SLICE_MS }),
        neighbourClient.run({ targets: [neighbour], concurrency: 1, ms: SLICE_MS }),
      ]);
      for (const slice of [quiet, flooding, calls]) {
        if (Object.keys(slice.unexpected).length > 0) throw new Error(`flood share: unexpected statuses ${JSON.stringify(slice.unexpected)}`);
      }
      flooded.push(...calls.latencies);
      floodedMs += calls.elapsedMs;
      answered += flooding.latencies.length;
    }
    const stats = (latencies: number[], ms: number) => ({ rps: (latencies.length * 1000) / Math.max(1, ms), p50: percentile([...latencies].sort((a, b) => a - b), 0.5) });
    return { alone: stats(alone, aloneMs), flooded: stats(flooded, floodedMs), floodPerSecond: (answered * 1000) / Math.max(1, floodedMs) };
  } finally {
    flooder.close();
  }
}
