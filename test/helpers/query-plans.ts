import { CompiledQuery, type Kysely, type LogEvent } from "kysely";
import type { Database, Dialect } from "../../src/store/index.ts";

export interface RecordedQuery {
  sql: string;
  parameters: readonly unknown[];
}

/** A Kysely query log that keeps the statements run while `recording` is on. */
export function queryRecorder(): { log: (event: LogEvent) => void; record<T>(run: () => Promise<T>): Promise<RecordedQuery[]> } {
  let recorded: RecordedQuery[] | null = null;
  return {
    log(event) {
      if (recorded !== null && event.level === "query") recorded.push({ sql: event.query.sql, parameters: event.query.parameters });
    },
    async record(run) {
      const mine: RecordedQuery[] = [];
      recorded = mine;
      try {
        await run();
      } finally {
        recorded = null;
      }
      return mine;
    },
  };
}

interface PgPlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PgPlanNode[];
}

/**
 * Which of `tables` the planner would read whole to run `query` now: SQLite's EXPLAIN QUERY PLAN
 * `SCAN <table>` (an index scan of the whole table included), PostgreSQL's `Seq Scan` nodes.
 */
export async function fullScans(db: Kysely<Database>, dialect: Dialect, query: RecordedQuery, tables: readonly string[]): Promise<string[]> {
  if (!/^\s*(select|update|delete|insert|with)\b/i.test(query.sql)) return [];
  if (dialect === "sqlite") {
    const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
    return plan.rows.map((row) => /^SCAN (\w+)/.exec(row.detail)?.[1] ?? "").filter((table) => tables.includes(table));
  }
  const plan = await db.executeQuery<{ "QUERY PLAN": Array<{ Plan: PgPlanNode }> }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
  const scans: string[] = [];
  const walk = (node: PgPlanNode) => {
    if (node["Node Type"] === "Seq Scan" && tables.includes(node["Relation Name"] ?? "")) scans.push(node["Relation Name"] ?? "");
    for (const child of node.Plans ?? []) walk(child);
  };
  for (const row of plan.rows) for (const entry of row["QUERY PLAN"]) walk(entry.Plan);
  return scans;
}
