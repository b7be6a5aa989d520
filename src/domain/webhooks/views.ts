import { iso } from "../../config/clock.ts";
import type { WebhooksTable } from "../../store/schema/webhooks.ts";
import type { Manifest } from "../source/manifest-types.ts";
import type { LastError } from "../routines/views.ts";

/** A webhook as the API shows it (spec: Webhook). `secret` only on create and after rotation. */
export interface WebhookView {
  id: string;
  app_id: string;
  op: string;
  name: string;
  url: string;
  secret_prefix: string;
  enabled: boolean;
  disabled_reason: WebhooksTable["disabled_reason"];
  last_run_at: string | null;
  last_outcome: WebhooksTable["last_outcome"];
  last_error: LastError | null;
  consecutive_failures: number;
  created_at: string;
  target: { op: string; input_schema: unknown; output_schema: unknown };
  secret?: string;
}

export function deliveryUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/v1/hooks/${id}`;
}

/** `manifest` is the app's active code, which the target is read from. */
export function webhookView(row: WebhooksTable, manifest: Manifest, baseUrl: string, secret?: string): WebhookView {
  const route = Object.hasOwn(manifest.routes, row.op) ? manifest.routes[row.op] : undefined;
  return {
    id: row.id,
    app_id: row.app_id,
    op: row.op,
    name: row.name,
    url: deliveryUrl(baseUrl, row.id),
    secret_prefix: row.secret_prefix,
    enabled: Number(row.enabled) === 1,
    disabled_reason: row.disabled_reason,
    last_run_at: row.last_run_at === null ? null : iso(Number(row.last_run_at)),
    last_outcome: row.last_outcome,
    last_error: row.last_error === null ? null : (JSON.parse(row.last_error) as LastError),
    consecutive_failures: Number(row.consecutive_failures),
    created_at: iso(Number(row.created_at)),
    target: { op: row.op, input_schema: route?.input ?? null, output_schema: route?.output ?? null },
    ...(secret === undefined ? {} : { secret }),
  };
}
