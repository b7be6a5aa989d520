import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * Builds (issue 17): durable jobs that bundle a module's `npm:` imports, claimed through leases
 * so any instance runs them and a crash mid-build is picked up again; bundles kept by the digest
 * of their input, so the same source publishes at once; each revision names the bundle it runs.
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("builds")
    .addColumn("id", "text", (c) => c.primaryKey())
    // Reserved at acceptance for a create: the app row appears only when the build publishes.
    .addColumn("app_id", "text", (c) => c.notNull())
    .addColumn("intent", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    // Who wrote it (JSON of the Actor; "null" for an anonymous create): checked again at publish.
    .addColumn("actor", "text", (c) => c.notNull())
    .addColumn("idempotency_key", "text")
    .addColumn("base_revision", "integer")
    .addColumn("module", "text", (c) => c.notNull())
    .addColumn("ui", "text")
    .addColumn("styles", "text")
    .addColumn("input_digest", "text", (c) => c.notNull())
    // The exact versions the previous revision ran, which unchanged ranges keep (JSON).
    .addColumn("prior_lock", "text")
    .addColumn("lock", "text")
    .addColumn("lock_digest", "text")
    .addColumn("error", "text")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("lease_holder", "text")
    .addColumn("lease_until", "bigint")
    .addColumn("revision", "integer")
    .addColumn("accepted_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addColumn("finished_at", "bigint")
    .addColumn("deadline", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("builds_state").on("builds").columns(["state", "accepted_at"]).execute();
  await db.schema.createIndex("builds_app").on("builds").columns(["app_id", "state"]).execute();
  await db.schema
    .createTable("build_bundles")
    .addColumn("input_digest", "text", (c) => c.primaryKey())
    .addColumn("bundle", "text", (c) => c.notNull())
    .addColumn("lock", "text", (c) => c.notNull())
    .addColumn("lock_digest", "text", (c) => c.notNull())
    // The `node:` built-ins the bundle leaves external: the isolate then needs nodejs_compat.
    .addColumn("node_builtins", "integer", (c) => c.notNull())
    .addColumn("size_bytes", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.alterTable("app_versions").addColumn("build_digest", "text").execute();
}
