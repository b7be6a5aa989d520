import { DOMAINS_KEY, type LiveEvents } from "../events/live-events.ts";
import type { Domains } from "./domains.ts";
import { hostKey } from "./hostname.ts";

// A change on another instance arrives through the bus; this is the backstop if one is missed.
const RELOAD_EVERY_MS = 60_000;

/**
 * Which app each served custom hostname belongs to, held in memory on each instance so routing a
 * request costs no query: loaded at start, reloaded whenever any instance changes a domain
 * (the live bus, NOTIFY across instances) and once a minute.
 */
export class DomainHosts {
  private hosts = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private stop: (() => void) | null = null;
  private loading: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(
    private readonly domains: Pick<Domains, "allServed">,
    private readonly live: LiveEvents,
  ) {}

  async start(): Promise<void> {
    await this.reload();
    this.stop = this.live.subscribe(DOMAINS_KEY, () => void this.reload().catch(() => undefined));
    this.timer = setInterval(() => void this.reload().catch(() => undefined), RELOAD_EVERY_MS);
    this.timer.unref();
  }

  /** The app served at this `Host`, or null. */
  appAt(host: string | undefined): string | null {
    if (this.hosts.size === 0) return null;
    const key = hostKey(host);
    return key === null ? null : (this.hosts.get(key) ?? null);
  }

  /** Whether any hostname is served by `appId` here (its deletion then moves what every instance serves). */
  serves(appId: string): boolean {
    for (const served of this.hosts.values()) if (served === appId) return true;
    return false;
  }

  /**
   * Reloads the map. Asked while one runs, it runs once more after it (a change may have come
   * after that one read); asked again meanwhile, those asks share that one more run.
   */
  reload(): Promise<void> {
    if (this.queued !== null) return this.queued;
    const run = async () => {
      this.queued = null;
      this.hosts = await this.domains.allServed();
    };
    const next = (this.loading ?? Promise.resolve()).then(run);
    this.queued = next;
    // The caller hears of a failure; the next reload only waits for this one to end.
    const settled: Promise<void> = next.catch(() => undefined).finally(() => {
      if (this.loading === settled) this.loading = null;
    });
    this.loading = settled;
    return next;
  }

  close(): void {
    this.stop?.();
    if (this.timer !== null) clearInterval(this.timer);
  }
}
