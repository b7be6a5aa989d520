import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * What an app's keys cost (runtime/storage/limits.ts, KEYS_CAP_BYTES): `key_bytes` on its usage
 * row, each KV and blob key counted as its length plus 64, filled from the keys already stored.
 * The values' cap never counted keys, so an app could write rows without end.
 *
 * PostgreSQL's one-statement KV writes (migrations 021, 023) take each key's cost and the cap on
 * keys, and keep the count as they keep the bytes: a new key adds its cost, or is refused with
 * `{keys, adding}` where a write past the values' cap comes back with `{used, size, freed}`.
 * The old signatures stay, as calls of the new ones with the key's cost worked out here and the
 * 100 MiB cap: an instance still running the code before this migration writes its one-key KV
 * writes on, counted. Its other writes and deletes do not keep `key_bytes`: upgrade every
 * instance together (src/store/README.md).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable("app_storage_usage").addColumn("key_bytes", "bigint", (c) => c.notNull().defaultTo(0)).execute();
  await sql`update app_storage_usage set key_bytes =
    coalesce((select sum(octet_length(k.key) + 64) from app_kv k where k.app_id = app_storage_usage.app_id), 0)
    + coalesce((select sum(octet_length(b.key) + 64) from app_blobs b where b.app_id = app_storage_usage.app_id), 0)`.execute(db);
  if (dialect !== "postgres") return;
  await sql`
    create function brickyard_kv_set(p_app text, p_key text, p_value text, p_size bigint, p_key_cost bigint, p_now bigint, p_cap bigint, p_key_cap bigint)
    returns table (data_version bigint, used bigint)
    language plpgsql volatile as $$
    declare
      v_used bigint;
      v_keys bigint;
      v_version bigint;
      v_old bigint;
      v_adding bigint := 0;
    begin
      insert into app_storage_usage as u (app_id, bytes, data_version) values (p_app, 0, 1)
        on conflict (app_id) do update set data_version = u.data_version + 1
        returning u.bytes, u.key_bytes, u.data_version into v_used, v_keys, v_version;
      select k.size into v_old from app_kv k where k.app_id = p_app and k.key = p_key;
      if not found then v_adding := p_key_cost; end if;
      v_old := coalesce(v_old, 0);
      if v_used - v_old + p_size > p_cap then
        raise exception using errcode = 'P0001', message = 'brickyard_storage_full',
          detail = json_build_object('used', v_used, 'size', p_size, 'freed', v_old)::text;
      end if;
      if v_keys + v_adding > p_key_cap then
        raise exception using errcode = 'P0001', message = 'brickyard_storage_full',
          detail = json_build_object('keys', v_keys, 'adding', v_adding)::text;
      end if;
      if p_size <> v_old or v_adding <> 0 then
        update app_storage_usage set bytes = bytes + p_size - v_old, key_bytes = key_bytes + v_adding where app_id = p_app;
      end if;
      insert into app_kv (app_id, key, value, size, updated_at) values (p_app, p_key, p_value, p_size, p_now)
        on conflict (app_id, key) do update set value = excluded.value, size = excluded.size, updated_at = excluded.updated_at;
      return query select v_version, v_used - v_old + p_size;
    end
    $$`.execute(db);
  await sql`
    create function brickyard_kv_set_many(p_apps text[], p_keys text[], p_values text[], p_sizes bigint[], p_key_costs bigint[], p_now bigint, p_caps bigint[], p_key_cap bigint)
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
  await sql`
    create or replace function brickyard_kv_set(p_app text, p_key text, p_value text, p_size bigint, p_now bigint, p_cap bigint)
    returns table (data_version bigint, used bigint)
    language sql volatile as $$
      select * from brickyard_kv_set(p_app, p_key, p_value, p_size, octet_length(p_key) + 64, p_now, p_cap, 104857600)
    $$`.execute(db);
  await sql`
    create or replace function brickyard_kv_set_many(p_apps text[], p_keys text[], p_values text[], p_sizes bigint[], p_now bigint, p_caps bigint[])
    returns table (out_ord int, out_version bigint, out_used bigint, out_refused text)
    language sql volatile as $$
      select * from brickyard_kv_set_many(p_apps, p_keys, p_values, p_sizes, array(select octet_length(k) + 64 from unnest(p_keys) with ordinality as t(k, i) order by i), p_now, p_caps, 104857600)
    $$`.execute(db);
}
