import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * PostgreSQL: `brickyard_kv_set_many` (migration 023, as 033 defines it) makes its apps' usage
 * rows, then locks them in a second statement. An app deleted between the two (its values
 * dropped, `AppStorage.dropApp`) had its row gone by the lock: the write then stored its value
 * with no usage row, where `sweepOrphans`, which finds a deleted app's leftovers by that row,
 * never saw it. Now such a row is made again and locked before the write. Nothing else changes.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`
    create or replace function brickyard_kv_set_many(p_apps text[], p_keys text[], p_values text[], p_sizes bigint[], p_key_costs bigint[], p_now bigint, p_caps bigint[], p_key_cap bigint)
    returns table (out_ord int, out_version bigint, out_used bigint, out_refused text)
    language plpgsql volatile as $$
    declare
      v_used bigint;
      v_keys bigint;
      v_old bigint;
      v_adding bigint;
    begin
      insert into app_storage_usage (app_id, bytes) select a, 0 from unnest(p_apps) a group by a order by a
        on conflict (app_id) do nothing;
      perform 1 from app_storage_usage u where u.app_id = any(p_apps) order by u.app_id for update;
      for i in 1 .. coalesce(array_length(p_apps, 1), 0) loop
        select u.bytes, u.key_bytes into v_used, v_keys from app_storage_usage u where u.app_id = p_apps[i];
        if not found then
          -- Deleted since this statement made it (an app's deletion drops its values): made again
          -- and locked in one statement, so what is written here has a usage row (sweepOrphans).
          insert into app_storage_usage as u (app_id, bytes) values (p_apps[i], 0)
            on conflict (app_id) do update set bytes = u.bytes
            returning u.bytes, u.key_bytes into v_used, v_keys;
        end if;
        select k.size into v_old from app_kv k where k.app_id = p_apps[i] and k.key = p_keys[i];
        v_adding := case when found then 0 else p_key_costs[i] end;
        v_old := coalesce(v_old, 0);
        out_ord := i;
        if v_used - v_old + p_sizes[i] > p_caps[i] then
          out_version := null;
          out_used := null;
          out_refused := json_build_object('used', v_used, 'size', p_sizes[i], 'freed', v_old)::text;
        elsif v_keys + v_adding > p_key_cap then
          out_version := null;
          out_used := null;
          out_refused := json_build_object('keys', v_keys, 'adding', v_adding)::text;
        else
          update app_storage_usage u set bytes = u.bytes + p_sizes[i] - v_old, key_bytes = u.key_bytes + v_adding, data_version = u.data_version + 1
            where u.app_id = p_apps[i] returning u.data_version into out_version;
          insert into app_kv (app_id, key, value, size, updated_at) values (p_apps[i], p_keys[i], p_values[i], p_sizes[i], p_now)
            on conflict (app_id, key) do update set value = excluded.value, size = excluded.size, updated_at = excluded.updated_at;
          out_used := v_used - v_old + p_sizes[i];
          out_refused := null;
        end if;
        return next;
      end loop;
    end
    $$`.execute(db);
}
