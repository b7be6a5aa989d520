import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * PostgreSQL: one KV write in one round trip. `AppStorage.write` takes five on PostgreSQL
 * (BEGIN, the usage row's lock and data version, the space check, the value, COMMIT), each a
 * round trip an op call waits for. This function does the same steps in the same order inside
 * its own statement: the usage row is locked first, and each later statement of a PL/pgSQL
 * function reads a fresh snapshot, so the old size it reads is the one the lock protects. A
 * write past the cap raises `brickyard_storage_full` with the figures, and nothing is changed.
 * SQLite runs the same steps in `AppStorage.write`; it needs no round trips.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`
    create function brickyard_kv_set(p_app text, p_key text, p_value text, p_size bigint, p_now bigint, p_cap bigint)
    returns table (data_version bigint, used bigint)
    language plpgsql volatile as $$
    declare
      v_used bigint;
      v_version bigint;
      v_old bigint;
    begin
      insert into app_storage_usage as u (app_id, bytes, data_version) values (p_app, 0, 1)
        on conflict (app_id) do update set data_version = u.data_version + 1
        returning u.bytes, u.data_version into v_used, v_version;
      select k.size into v_old from app_kv k where k.app_id = p_app and k.key = p_key;
      v_old := coalesce(v_old, 0);
      if v_used - v_old + p_size > p_cap then
        raise exception using errcode = 'P0001', message = 'brickyard_storage_full',
          detail = json_build_object('used', v_used, 'size', p_size, 'freed', v_old)::text;
      end if;
      if p_size <> v_old then
        update app_storage_usage set bytes = bytes + p_size - v_old where app_id = p_app;
      end if;
      insert into app_kv (app_id, key, value, size, updated_at) values (p_app, p_key, p_value, p_size, p_now)
        on conflict (app_id, key) do update set value = excluded.value, size = excluded.size, updated_at = excluded.updated_at;
      return query select v_version, v_used - v_old + p_size;
    end
    $$`.execute(db);
}
