/** Durable runtime-failure events (spec: Activity event), redacted before they are written. */
export interface ActivityEventsTable {
  id: string;
  app_id: string;
  ts: number;
  kind: "api_proxy_result" | "diag_report" | "contract_validation";
  revision: number;
  summary: string;
  /** JSON object text; never stacks, tokens or source. */
  data: string;
}

/** Per app, kind and UTC day: how many events were offered, to cap how many are kept. */
export interface ActivityCountsTable {
  app_id: string;
  kind: string;
  /** UTC day number (epoch ms / 86 400 000, floored). */
  day: number;
  count: number;
}
