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
  "Index Cond"?: string;
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

/**
 * How `query` would read `table` where it does not name a whole row by `key` (its primary key's
 * columns): SQLite's `SCAN`, or a `SEARCH` on fewer columns; PostgreSQL's sequential scans, or
 * index scans whose condition leaves a key column out. A read by the whole key visits the rows it
 * names, however many the table holds. Empty when every read of `table` is keyed.
 */
export async function unkeyedReads(db: Kysely<Database>, dialect: Dialect, query: RecordedQuery, table: string, key: readonly string[]): Promise<string[]> {
  if (!/^\s*(select|update|delete|insert|with)\b/i.test(query.sql)) return [];
  if (dialect === "sqlite") {
    const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
    const keyed = new RegExp(`^SEARCH ${table} USING .*\\(${key.map((c) => `${c}=\\?`).join(" AND ")}\\)`);
    return plan.rows.map((row) => row.detail).filter((detail) => new RegExp(`^(SCAN|SEARCH) ${table}\\b`).test(detail) && !keyed.test(detail));
  }
  const plan = await db.executeQuery<{ "QUERY PLAN": Array<{ Plan: PgPlanNode }> }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
  const reads: string[] = [];
  const conditions = (node: PgPlanNode): string => [node["Index Cond"] ?? "", ...(node.Plans ?? []).map(conditions)].join(" ");
  const walk = (node: PgPlanNode) => {
    // A write's own node (insert, update, delete) reads nothing: the scan under it, if any, does.
    if (node["Relation Name"] === table && node["Node Type"] !== "ModifyTable") {
      const cond = conditions(node);
      if (!key.every((column) => new RegExp(`\\b${column}\\b`).test(cond))) reads.push(`${node["Node Type"]} ${cond}`.trim());
    }
    for (const child of node.Plans ?? []) walk(child);
  };
  for (const row of plan.rows) for (const entry of row["QUERY PLAN"]) walk(entry.Plan);
  return reads;
}
