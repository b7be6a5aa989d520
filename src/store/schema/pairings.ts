/** Device-pairing grants (DECISIONS §2): one row per `POST /api/pair/start` or bound app create. */
export interface PairingsTable {
  id: string;
  /** SHA-256 (hex) of the device code; the agent holds the only plaintext. */
  device_code_hash: string;
  /** `SVC-XXXXXX`, unique among every stored row (stricter than "among live codes"). */
  user_code: string;
  /** What the agent called itself, shown on the approval page; at most 80 characters. */
  label: string | null;
  /** The anonymous app this pairing is bound to; claiming that app approves it. */
  app_id: string | null;
  /** `pending` until decided; expiry is derived from `expires_at`, never written. */
  status: "pending" | "approved" | "denied" | "consumed";
  /** Who approved or denied. */
  user_id: string | null;
  /** Seconds the agent must wait between polls; grows by 5 on every `slow_down`. */
  interval_sec: number;
  created_at: number;
  /** Sliding: each pending poll moves it to now + 10 min, never past created_at + 60 min. */
  expires_at: number;
  last_polled_at: number | null;
  decided_at: number | null;
  consumed_at: number | null;
}

/** Failed approval guesses per user, for the 5-wrong-codes lock-out (DECISIONS §2). */
export interface PairingGuardsTable {
  user_id: string;
  /** Wrong codes counted in the window that started at `window_start`. */
  failures: number;
  window_start: number;
  /** Approvals are refused until this time; null when not locked. */
  locked_until: number | null;
}
