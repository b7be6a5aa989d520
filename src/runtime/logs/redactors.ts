import { SECOND, type Clock } from "../../config/clock.ts";
import { longestSecretForm, secretRedactor } from "../../lib/redact.ts";
import type { SecretsSource } from "../executor/internal-api/backends.ts";

/** What a log line goes through: the app's secrets cut out, and a cut line's end made safe. */
export interface LineRedactor {
  redact(text: string): string;
  /**
   * A line cut short may end in the start of a secret that no whole form matches: its last
   * characters, as many as the longest form has, go too.
   */
  cutTail(text: string): string;
}

/** Secrets change rarely and bump the version; the TTL bounds what a claim or an expiry leaves stale. */
const TTL_MS = 30 * SECOND;
const MAX_APPS = 1000;

/**
 * Redactors per app and secrets version, so an app that logs on every call reads and decrypts
 * its secrets once rather than on each call. The values are those its isolate was started with
 * (the same version), which are all its code could have printed.
 */
export class LineRedactors {
  private readonly cache = new Map<string, { at: number; redactor: Promise<LineRedactor> }>();

  constructor(
    private readonly secrets: SecretsSource,
    private readonly clock: Clock,
  ) {}

  for(appId: string, secretsVersion: number): Promise<LineRedactor> {
    const key = `${appId}:${secretsVersion}`;
    const now = this.clock.now();
    const hit = this.cache.get(key);
    if (hit !== undefined && now - hit.at < TTL_MS) return hit.redactor;
    const redactor = this.secrets.forApp(appId).then(lineRedactor);
    // A failed read is not kept: the next call tries again.
    redactor.catch(() => this.cache.delete(key));
    this.cache.delete(key);
    this.cache.set(key, { at: now, redactor });
    if (this.cache.size > MAX_APPS) this.cache.delete(this.cache.keys().next().value as string);
    return redactor;
  }
}

function lineRedactor(values: Record<string, string>): LineRedactor {
  const redact = secretRedactor(values);
  const longest = longestSecretForm(values);
  return { redact, cutTail: (text) => text.slice(0, Math.max(0, text.length - longest)) };
}
