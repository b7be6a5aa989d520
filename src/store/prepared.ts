import type { Compilable, CompiledQuery, Kysely, QueryResult } from "kysely";
import type { Database } from "./schema/index.ts";

interface Compiled<Row> {
  query: CompiledQuery<Row>;
  /** Per compiled parameter: which argument goes there, or the constant the builder put there. */
  slots: (number | { constant: unknown })[];
}

/**
 * A query Kysely builds and compiles once; each run only swaps in its arguments. Kysely builds
 * every query afresh (an AST, then a visitor pass), and on the KV path of an op call that cost
 * as much as SQLite's own work.
 *
 * `build` must use each argument only as a plain value (no arithmetic on it, no branching on
 * it): it is called once with placeholders, and wherever a placeholder lands among the compiled
 * parameters the real argument goes at run time. A placeholder that does not land there, or
 * lands twice, is refused at compile time rather than answering a different query.
 */
export class PreparedQuery<Args extends unknown[], Row> {
  // Per dialect instance (one per store; a transaction shares its store's), so one constant
  // serves SQLite and PostgreSQL stores side by side, as the tests run them.
  private readonly compiled = new WeakMap<object, Compiled<Row>>();

  constructor(
    private readonly arity: Args["length"],
    private readonly build: (db: Kysely<Database>, ...args: Args) => Compilable<Row>,
  ) {}

  async execute(db: Kysely<Database>, ...args: Args): Promise<QueryResult<Row>> {
    const dialect = db.getExecutor().adapter;
    let compiled = this.compiled.get(dialect);
    if (compiled === undefined) this.compiled.set(dialect, (compiled = this.compile(db)));
    const { query, slots } = compiled;
    const parameters = slots.map((slot) => (typeof slot === "number" ? args[slot] : slot.constant));
    return db.executeQuery<Row>({ ...query, parameters });
  }

  async takeFirst(db: Kysely<Database>, ...args: Args): Promise<Row | undefined> {
    return (await this.execute(db, ...args)).rows[0];
  }

  private compile(db: Kysely<Database>): Compiled<Row> {
    const marks = Array.from({ length: this.arity }, (_, i) => `\u0000prepared-argument-${i}\u0000`);
    const query = this.build(db, ...(marks as Args)).compile();
    const slots = query.parameters.map((p) => {
      const index = typeof p === "string" ? marks.indexOf(p) : -1;
      return index >= 0 ? index : { constant: p };
    });
    const used = slots.filter((s): s is number => typeof s === "number");
    if (used.length !== this.arity || new Set(used).size !== this.arity) throw new Error(`a prepared query must use each of its ${this.arity} arguments once as a value: ${query.sql}`);
    return { query, slots };
  }
}
