import type { Kysely, Selectable } from "kysely";
import { DAY, iso } from "../../config/clock.ts";
import { PreparedQuery, timeOrderedUuid, type Database } from "../../store/index.ts";
import type { WebhookDeliveriesTable } from "../../store/schema/webhooks.ts";
import { redactSecrets } from "./secret.ts";

/** Spec Limits: bodies are kept 30 days, the rest of a record 90 days. */
export const DELIVERY_BODY_RETENTION_MS = 30 * DAY;
export const DELIVERY_RECORD_RETENTION_MS = 90 * DAY;
export const DELIVERIES_PAGE_DEFAULT = 50;
export const DELIVERIES_PAGE_MAX = 200;

/** One recorded request (DECISIONS §8). Bodies are null once their 30 days are over. */
export interface DeliveryView {
  id: string;
  ts: string;
  status: number;
  outcome: WebhookDeliveriesTable["outcome"];
  refusal?: string;
  requestBytes: number;
  requestBody: string | null;
  requestTruncated: boolean;
  responseBytes: number;
  responseBody: string | null;
  responseTruncated: boolean;
  durationMs: number;
}

export interface DeliveryInput {
  webhookId: string;
  appId: string;
  ts: number;
  status: number;
  outcome: WebhookDeliveriesTable["outcome"];
  refusal: string | null;
  request: Buffer;
  response: string;
  durationMs: number;
  /** The owner's plan cap on each stored body, in bytes. */
  capBytes: number;
}

// Every delivery writes one, so it is built and compiled once (PreparedQuery).
const insertRecord = new PreparedQuery(
  14,
  (
    db,
    id: string,
    webhookId: string,
    appId: string,
    ts: number,
    status: number,
    outcome: WebhookDeliveriesTable["outcome"],
    refusal: string | null,
    requestBytes: number,
    requestBody: string,
    requestTruncated: number,
    responseBytes: number,
    responseBody: string,
    responseTruncated: number,
    durationMs: number,
  ) =>
    db.insertInto("webhook_deliveries").values({
      id,
      webhook_id: webhookId,
      app_id: appId,
      ts,
      status,
      outcome,
      refusal,
      request_bytes: requestBytes,
      request_body: requestBody,
      request_truncated: requestTruncated,
      response_bytes: responseBytes,
      response_body: responseBody,
      response_truncated: responseTruncated,
      duration_ms: durationMs,
    }),
);

export async function insertDelivery(db: Kysely<Database>, d: DeliveryInput): Promise<void> {
  const request = capBody(redactSecrets(d.request.toString("utf8")), d.capBytes);
  const response = capBody(redactSecrets(d.response), d.capBytes);
  await insertRecord.execute(
    db,
    timeOrderedUuid(),
    d.webhookId,
    d.appId,
    d.ts,
    d.status,
    d.outcome,
    d.refusal,
    d.request.length,
    request.body,
    request.truncated ? 1 : 0,
    Buffer.byteLength(d.response),
    response.body,
    response.truncated ? 1 : 0,
    d.durationMs,
  );
}

/** Newest first, `before` (a record's `ts`) paging backwards. */
export async function listDeliveries(db: Kysely<Database>, webhookId: string, limit: number, before: number | null): Promise<DeliveryView[]> {
  let query = db.selectFrom("webhook_deliveries").selectAll().where("webhook_id", "=", webhookId);
  if (before !== null) query = query.where("ts", "<", before);
  const rows = await query.orderBy("ts", "desc").orderBy("seq", "desc").limit(limit).execute();
  return rows.map(deliveryView);
}

/** The retention sweep: bodies after 30 days, whole records after 90. */
export async function sweepDeliveries(db: Kysely<Database>, now: number): Promise<{ bodies: number; records: number }> {
  const records = await db.deleteFrom("webhook_deliveries").where("ts", "<", now - DELIVERY_RECORD_RETENTION_MS).executeTakeFirst();
  const bodies = await db
    .updateTable("webhook_deliveries")
    .set({ request_body: null, response_body: null })
    .where("ts", "<", now - DELIVERY_BODY_RETENTION_MS)
    .where((eb) => eb.or([eb("request_body", "is not", null), eb("response_body", "is not", null)]))
    .executeTakeFirst();
  return { bodies: Number(bodies.numUpdatedRows), records: Number(records.numDeletedRows) };
}

/** At most `cap` bytes of UTF-8, cut on a character boundary. */
export function capBody(text: string, cap: number): { body: string; truncated: boolean } {
  // Most bodies fit: count their bytes without copying them.
  if (Buffer.byteLength(text, "utf8") <= cap) return { body: text, truncated: false };
  const bytes = Buffer.from(text, "utf8");
  let end = cap;
  // Back off continuation bytes (10xxxxxx) so a multi-byte character is never split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return { body: bytes.subarray(0, end).toString("utf8"), truncated: true };
}

function deliveryView(row: Selectable<WebhookDeliveriesTable>): DeliveryView {
  return {
    id: row.id,
    ts: iso(Number(row.ts)),
    status: Number(row.status),
    outcome: row.outcome,
    ...(row.refusal === null ? {} : { refusal: row.refusal }),
    requestBytes: Number(row.request_bytes),
    requestBody: row.request_body,
    requestTruncated: Number(row.request_truncated) === 1,
    responseBytes: Number(row.response_bytes),
    responseBody: row.response_body,
    responseTruncated: Number(row.response_truncated) === 1,
    durationMs: Number(row.duration_ms),
  };
}
