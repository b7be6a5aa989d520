import { MINUTE, type Clock } from "../../config/clock.ts";
import type { IssuedToken } from "../tokens/tokens.ts";

/**
 * How long one app's shared visitor token is handed out. A flooder of one page then adds one row
 * per form every 10 minutes, ~2,900 over the rows' retention (query tokens live a day, frame
 * tokens 7, each kept a day past expiry): about as much as the app's own largest source, so
 * visiting apps costs the store no more than creating them.
 */
export const VISITOR_TOKEN_WINDOW_MS = 10 * MINUTE;
/** Apps whose shared tokens this process keeps (the oldest mint forgotten first). */
const KEPT_MAX = 10_000;

/**
 * Render tokens of anonymous visitors, shared: one per app and form (query or frame) for
 * `VISITOR_TOKEN_WINDOW_MS`, handed to every anonymous render in that window, then a new one.
 *
 * Every page view minted a token row before, with a durable commit, and the frame another: an
 * unmetered GET from anyone wrote two rows kept for days (at ~900 views a second, tens of
 * millions a day) and paid an fsync on Node's thread each. Sharing is safe because an anonymous
 * visitor's token grants nothing a request with no token lacks: it acts for nobody, and the
 * visitor role comes from the app being unclaimed or public when it is used (`directRole`),
 * exactly as for a request without one. Signed-in people keep a token of their own per render.
 */
export class VisitorTokens {
  private readonly shared = new Map<string, { token: Promise<IssuedToken>; until: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs = VISITOR_TOKEN_WINDOW_MS,
    private readonly keptMax = KEPT_MAX,
  ) {}

  /** The app's current shared token of `form`, or one from `mint` when there is none or it is old. */
  get(form: string, appId: string, mint: () => Promise<IssuedToken>): Promise<IssuedToken> {
    const key = `${form}:${appId}`;
    const now = this.clock.now();
    const found = this.shared.get(key);
    if (found !== undefined && found.until > now) return found.token;
    // Re-inserted, so the map's order stays the order of mints and the first entry is the oldest.
    this.shared.delete(key);
    // Renders that arrive while the row is written share its mint: one row, however many wait.
    const entry = { token: mint(), until: now + this.windowMs };
    this.shared.set(key, entry);
    // A failed mint is not kept: the next render mints again.
    entry.token.catch(() => {
      if (this.shared.get(key) === entry) this.shared.delete(key);
    });
    if (this.shared.size > this.keptMax) {
      const oldest = this.shared.keys().next();
      if (oldest.done !== true) this.shared.delete(oldest.value);
    }
    return entry.token;
  }
}
