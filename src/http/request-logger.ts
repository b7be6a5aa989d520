import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, LogFn } from "pino";

// pino's standard levels; a line is written at or above the logger's level.
const LEVELS = new Map<string, number>([
  ["trace", 10],
  ["debug", 20],
  ["info", 30],
  ["warn", 40],
  ["error", 50],
  ["fatal", 60],
  ["silent", Infinity],
]);

/**
 * Fastify's child logger for a request, made only when the request logs something. Fastify
 * builds one per request, and pino serializes its bindings (the request id) at once: ~3 % of
 * `GET /healthz`'s time and ~2 % of an op call's in `npm run bench` profiles, for a logger most
 * requests never use (completions log at debug, see installRequestLog). The line it writes,
 * when it writes one, is the same.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;

  static {
    // Each level's method, on the prototype: a line below the level makes no child.
    for (const level of ["fatal", "error", "warn", "info", "debug", "trace"] as const) {
      LazyRequestLogger.prototype[level] = function (this: LazyRequestLogger, ...args: Parameters<LogFn>) {
        if (this.enabled(level)) this.made[level](...args);
      };
    }
  }

  #made: FastifyBaseLogger | null = null;
  #level: LevelWithSilentOrString | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** Creates this request's child: `new LazyRequestLogger(...)` as Fastify's `childLoggerFactory`. */
  static factory(this: void, parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
    return new LazyRequestLogger(parent, bindings, options);
  }

  private get made(): FastifyBaseLogger {
    if (this.#made === null) {
      this.#made = this.parent.child(this.bindings, this.options);
      if (this.#level !== null) this.#made.level = this.#level;
    }
    return this.#made;
  }

  /** Whether a line at `level` would be written; true for a level this does not know (pino's custom levels). */
  private enabled(level: string): boolean {
    const current = LEVELS.get(this.level);
    return current === undefined || (LEVELS.get(level) ?? Infinity) >= current;
  }

  get level(): LevelWithSilentOrString {
    return this.#made?.level ?? this.#level ?? this.options.level ?? this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    if (this.#made === null) this.#level = level;
    else this.#made.level = level;
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.made.child(bindings, options);
  }
}
