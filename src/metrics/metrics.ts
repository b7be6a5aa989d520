import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** The executor's state, read at each scrape. */
export interface ExecutorCensus {
  /** Live processes by what they run (`claimed`, `free`, `new-claimed`, `new-free`, `trial`). */
  processes: Record<string, number>;
  isolates: number;
}

/** What the metrics read at scrape time from the parts that own the state (DECISIONS §16). */
export interface MetricSources {
  executor?: () => ExecutorCensus;
  /** Builds by state (queued, running and every terminal state), counted in the store. */
  builds?: () => Promise<Record<string, number>>;
  /** How late the scheduler last woke for a period that had opened, in ms. */
  schedulerLagMs?: () => number;
  /** The store's connection pool (PostgreSQL); SQLite has none. */
  storePool?: () => { total: number; idle: number; waiting: number } | null;
  openStreams?: () => number;
  /** PostgreSQL: whether the read caches' change channel delivers (null on SQLite, which has none). */
  readCacheChannel?: () => boolean | null;
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Prometheus metrics for one instance (DECISIONS §16), each named `brickyard_…`, beside the
 * client's default process metrics. Counters and histograms move on the hot path with no await and
 * no store write; gauges are read from their owners when Prometheus scrapes. One registry per
 * instance of the app, not prom-client's global one: tests run several in one process.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"family" | "method" | "status">;
  private readonly durations: Histogram<"family" | "method">;
  private readonly opCalls: Counter<"outcome">;
  private readonly restarts: Counter<"reason">;
  private readonly quarantines: Counter;
  private readonly loopDelay: IntervalHistogram;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({ name: "brickyard_http_requests_total", help: "HTTP requests answered, by route family, method and status", labelNames: ["family", "method", "status"], registers });
    this.durations = new Histogram({
      name: "brickyard_http_request_duration_seconds",
      help: "Time to answer an HTTP request, by route family and method",
      labelNames: ["family", "method"],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.opCalls = new Counter({ name: "brickyard_op_calls_total", help: "Operation calls, by outcome: ok, or the error kind they answered", labelNames: ["outcome"], registers });
    this.restarts = new Counter({ name: "brickyard_executor_restarts_total", help: "Executor processes killed and restarted, by reason", labelNames: ["reason"], registers });
    this.quarantines = new Counter({ name: "brickyard_executor_quarantines_total", help: "Apps quarantined for taking executor processes down", registers });
    this.loopDelay = monitorEventLoopDelay({ resolution: 10 });
    this.loopDelay.enable();
    const loopDelay = this.loopDelay;
    new Gauge({
      name: "brickyard_event_loop_delay_seconds",
      help: "Node's event-loop delay since the last scrape: p99",
      registers,
      collect() {
        this.set(loopDelay.percentile(99) / 1e9);
        loopDelay.reset();
      },
    });
    const { executor, builds, schedulerLagMs, storePool, openStreams, readCacheChannel } = sources;
    if (executor !== undefined) {
      new Gauge({
        name: "brickyard_executor_processes",
        help: "Live executor processes, by what they run",
        labelNames: ["lane"],
        registers,
        collect() {
          this.reset();
          for (const [lane, n] of Object.entries(executor().processes)) this.set({ lane }, n);
        },
      });
      new Gauge({
        name: "brickyard_executor_isolates",
        help: "App isolates loaded in the executor processes",
        registers,
        collect() {
          this.set(executor().isolates);
        },
      });
    }
    if (builds !== undefined) {
      new Gauge({
        name: "brickyard_builds",
        help: "Builds of npm imports, by state (queued and running ones are the work in hand)",
        labelNames: ["state"],
        registers,
        async collect() {
          this.reset();
          for (const [state, n] of Object.entries(await builds())) this.set({ state }, n);
        },
      });
    }
    if (schedulerLagMs !== undefined) {
      new Gauge({
        name: "brickyard_scheduler_lag_seconds",
        help: "How late the scheduler last woke for a period that had opened",
        registers,
        collect() {
          this.set(schedulerLagMs() / 1000);
        },
      });
    }
    if (storePool !== undefined) {
      new Gauge({
        name: "brickyard_store_pool_connections",
        help: "The store's connection pool (PostgreSQL): connections in use and idle, and queries waiting for one",
        labelNames: ["state"],
        registers,
        collect() {
          const pool = storePool();
          this.reset();
          if (pool === null) return;
          this.set({ state: "in_use" }, pool.total - pool.idle);
          this.set({ state: "idle" }, pool.idle);
          this.set({ state: "waiting" }, pool.waiting);
        },
      });
    }
    if (openStreams !== undefined) {
      new Gauge({
        name: "brickyard_event_streams_open",
        help: "Live event streams held open by this instance",
        registers,
        collect() {
          this.set(openStreams());
        },
      });
    }
    if (readCacheChannel !== undefined) {
      new Gauge({
        name: "brickyard_read_cache_channel_up",
        help: "PostgreSQL: 1 while the channel that tells this instance of other instances' changes delivers (op calls' app reads are kept), 0 while each call reads again",
        registers,
        collect() {
          const up = readCacheChannel();
          this.reset();
          if (up !== null) this.set(up ? 1 : 0);
        },
      });
    }
  }

  /** One answered request: `family` is its route's family (routeFamily), never its raw URL. */
  httpRequest(family: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ family, method, status: String(status) });
    this.durations.observe({ family, method }, seconds);
  }

  /** One op call's outcome: `ok`, or the kind of error it answered. */
  opCall(outcome: string): void {
    this.opCalls.inc({ outcome });
  }

  /** An executor process killed (by its reason), and the app it quarantined, if any. */
  executorFault(reason: string, quarantined: boolean): void {
    this.restarts.inc({ reason });
    if (quarantined) this.quarantines.inc();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    this.loopDelay.disable();
    this.registry.clear();
  }
}

/**
 * A route's family, for labels: its template's fixed segments, up to three (`/app/:id/api/:op` is
 * `app/api`, `/api/v1/apps/:appId/routines` is `api/v1/apps`); a request no route matched is
 * `unmatched`. A bounded set, whatever URLs clients send.
 */
export function routeFamily(template: string | undefined): string {
  if (template === undefined || template === "") return "unmatched";
  const fixed = template.split("/").filter((part) => part !== "" && !part.startsWith(":") && part !== "*");
  return fixed.length === 0 ? "root" : fixed.slice(0, 3).join("/");
}
