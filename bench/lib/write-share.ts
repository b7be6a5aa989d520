// A neighbour's op calls while one owner writes an app's source from many connections, against
// the same calls alone, in interleaved slices. App create and update calls are not metered
// (spec: rate limits); what keeps the neighbour served is the writer's lane (src/http/fair-share).
import { LoadClient, percentile, SLICE_MS, type Target } from "./measure.ts";

export interface WriteShare {
  alone: { rps: number; p50: number };
  flooded: { rps: number; p50: number };
  /** The owner's writes answered a second during the flooded slices. */
  writesPerSecond: number;
}

/**
 * `neighbour` is called from one connection, as one agent would; `writes` come from `writers`
 * connections of a second client process. Both clients are other processes than the server's.
 */
export async function writeShare(neighbourClient: LoadClient, neighbour: Target, writes: Target[], options: { writers: number; msPerRow: number }): Promise<WriteShare> {
  const flooder = LoadClient.start();
  try {
    const alone: number[] = [];
    const flooded: number[] = [];
    let aloneMs = 0;
    let floodedMs = 0;
    let written = 0;
    // One unmeasured slice of each first, as measure() does.
    await flooder.run({ targets: writes, concurrency: options.writers, ms: SLICE_MS });
    for (let i = 0; i < Math.ceil(options.msPerRow / SLICE_MS); i++) {
      const quiet = await neighbourClient.run({ targets: [neighbour], concurrency: 1, ms: SLICE_MS });
      alone.push(...quiet.latencies);
      aloneMs += quiet.elapsedMs;
      const [flood, calls] = await Promise.all([
        flooder.run({ targets: writes, concurrency: options.writers, ms: SLICE_MS }),
        neighbourClient.run({ targets: [neighbour], concurrency: 1, ms: SLICE_MS }),
      ]);
      for (const slice of [quiet, flood, calls]) {
        if (Object.keys(slice.unexpected).length > 0) throw new Error(`write share: unexpected statuses ${JSON.stringify(slice.unexpected)}`);
      }
      flooded.push(...calls.latencies);
      floodedMs += calls.elapsedMs;
      written += flood.latencies.length;
    }
    const stats = (latencies: number[], ms: number) => ({ rps: (latencies.length * 1000) / Math.max(1, ms), p50: percentile([...latencies].sort((a, b) => a - b), 0.5) });
    return { alone: stats(alone, aloneMs), flooded: stats(flooded, floodedMs), writesPerSecond: (written * 1000) / Math.max(1, floodedMs) };
  } finally {
    flooder.close();
  }
}
