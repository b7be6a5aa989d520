import type { Kysely } from "kysely";
import type { Database } from "../../store/index.ts";

/** The `pairing` object of an anonymous create response with `pair: true` (spec: App create response). */
export interface BoundPairing {
  device_code: string;
  user_code: string;
  verification_url: string;
  polling_interval: number;
  expires_in: number;
}

/**
 * Where device pairing plugs into the app lifecycle. The pairing service implements this and
 * registers it with `ctx.apps.setPairing(…)` in createContext; until then `pair: true` is
 * accepted and answered without a `pairing` object, and claims approve nothing.
 * Both hooks run inside the app write's transaction (`trx`), so they commit or roll back with it.
 */
export interface PairingSeam {
  /** Anonymous POST /app with `pair: true`: mint a device code bound to the new app. */
  startBoundPairing(trx: Kysely<Database>, input: { appId: string; label: string | null }): Promise<BoundPairing>;
  /** POST /app/{id}/claim: auto-approve the pairing bound to the app for the claiming user, if any. */
  approveBoundPairing(trx: Kysely<Database>, input: { appId: string; userId: string }): Promise<void>;
}
