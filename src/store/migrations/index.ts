import type { Kysely, Migration, MigrationProvider } from "kysely";
import type { Dialect } from "../dialect.ts";
import * as m001 from "./001-accounts.ts";
import * as m004 from "./004-pairings.ts";

/**
 * Numbered migrations, applied in order at start. Never edit one that has landed; add the next
 * number. A migration whose SQL differs by dialect receives the dialect as its second argument.
 */
type Step = { up(db: Kysely<unknown>, dialect: Dialect): Promise<void> };

const steps: Record<string, Step> = {
  "001-accounts": m001,
  "004-pairings": m004,
};

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return {
    getMigrations(): Promise<Record<string, Migration>> {
      const out: Record<string, Migration> = {};
      for (const [name, step] of Object.entries(steps)) {
        out[name] = { up: (db: Kysely<unknown>) => step.up(db, dialect) };
      }
      return Promise.resolve(out);
    },
  };
}
