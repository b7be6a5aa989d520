import type { Kysely } from "kysely";
import type { Database } from "../../src/store/index.ts";

/** How many rows of an app's own store there are: its KV values, its blobs, its usage row. */
export async function valueRowsOf(db: Kysely<Database>, appId: string): Promise<{ kv: number; blobs: number; usage: number }> {
  const count = async (table: "app_kv" | "app_blobs" | "app_storage_usage") => (await db.selectFrom(table).select("app_id").where("app_id", "=", appId).execute()).length;
  return { kv: await count("app_kv"), blobs: await count("app_blobs"), usage: await count("app_storage_usage") };
}
