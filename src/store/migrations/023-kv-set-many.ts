import { sql, type Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * PostgreSQL: the single-key KV writes of several op calls in one round trip and one commit.
 * Concurrent ops each sent `brickyard_kv_set` (migration 021) as a statement of its own: a round
 * trip and a WAL flush apiece. This takes them as arrays, entry i being one op's write.
 *
 * Every usage row the entries touch is created if missing and locked first, in app-id order, as
 * `lockUsageRows` does, so this queues behind (and ahead of) any other writer instead of
 * deadlocking. Then each entry in turn runs the steps of `brickyard_kv_set`. An entry past its
 * cap changes nothing and comes back with its figures in `out_refused`: one op's
 * `storage_full` does not fail the others. Entries of one app see each other's writes in order.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`
    create function brickyard_kv_set_many(p_apps text[], p_keys text[], p_values text[], p_sizes bigint[], p_now bigint, p_caps bigint[])
    returns table (out_ord int, out_version bigint, out_used bigint, out_refused text)
    language plpgsql volatile as $$
    declare
      v_used bigint;
      v_old bigint;
    begin
      insert into app_storage_usage (app_id, bytes) select a, 0 from unnest(p_apps) a group by a order by a
        on conflict (app_id) do nothing;
      perform 1 from app_storage_usage u where u.app_id = any(p_apps) order by u.app_id for update;
      for i in 1 .. coalesce(array_length(p_apps, 1), 0) loop
        select u.bytes into v_used from app_storage_usage u where u.app_id = p_apps[i];
        select k.size into v_old from app_kv k where k.app_id = p_apps[i] and k.key = p_keys[i];
        v_old := coalesce(v_old, 0);
        out_ord := i;
        if v_used - v_old + p_sizes[i] > p_caps[i] then
          out_version := null;
          out_used := null;
          out_refused := json_build_object('used', v_used, 'size', p_sizes[i], 'freed', v_old)::text;
        else
          update app_storage_usage u set bytes = u.bytes + p_sizes[i] - v_old, data_version = u.data_version + 1
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
