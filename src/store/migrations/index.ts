import type { Kysely, Migration, MigrationProvider } from "kysely";
import type { Dialect } from "../dialect.ts";
import * as m001 from "./001-accounts.ts";
import * as m002 from "./002-apps.ts";
import * as m003 from "./003-app-storage.ts";
import * as m004 from "./004-pairings.ts";
import * as m005 from "./005-secrets.ts";
import * as m006 from "./006-leases.ts";
import * as m007 from "./007-routines-webhooks.ts";
import * as m008 from "./008-web.ts";
import * as m009 from "./009-shares.ts";
import * as m010 from "./010-mail.ts";
import * as m011 from "./011-teams.ts";
import * as m012 from "./012-copies.ts";
import * as m013 from "./013-templates.ts";
import * as m014 from "./014-snapshots.ts";
import * as m015 from "./015-builds.ts";
import * as m016 from "./016-idempotency.ts";
import * as m017 from "./017-build-copies.ts";
import * as m018 from "./018-call-counts.ts";
import * as m019 from "./019-secret-versions.ts";
import * as m020 from "./020-data-versions.ts";
import * as m021 from "./021-kv-set-function.ts";
import * as m022 from "./022-token-epoch.ts";
import * as m023 from "./023-kv-set-many.ts";
import * as m024 from "./024-render-token-holders.ts";
import * as m025 from "./025-token-epoch-at-commit.ts";
import * as m026 from "./026-operators.ts";
import * as m027 from "./027-oauth.ts";
import * as m028 from "./028-domains.ts";
import * as m029 from "./029-visitor-kv.ts";
import * as m030 from "./030-cache-notify.ts";
import * as m031 from "./031-blob-objects.ts";
import * as m032 from "./032-visitor-usage.ts";
import * as m033 from "./033-key-bytes.ts";
import * as m034 from "./034-usage-row-kept.ts";
import * as m035 from "./035-orphan-secrets.ts";
import * as m036 from "./036-outbox-created.ts";
import * as m037 from "./037-snapshot-bytes.ts";
import * as m038 from "./038-share-invites-sent.ts";

/**
 * Numbered migrations, applied in order at start. Never edit one that has landed; add the next
 * number. A migration whose SQL differs by dialect receives the dialect as its second argument.
 */
type Step = { up(db: Kysely<unknown>, dialect: Dialect): Promise<void> };

const steps: Record<string, Step> = {
  "001-accounts": m001,
  "002-apps": m002,
  "003-app-storage": m003,
  "004-pairings": m004,
  "005-secrets": m005,
  "006-leases": m006,
  "007-routines-webhooks": m007,
  "008-web": m008,
  "009-shares": m009,
  "010-mail": m010,
  "011-teams": m011,
  "012-copies": m012,
  "013-templates": m013,
  "014-snapshots": m014,
  "015-builds": m015,
  "016-idempotency": m016,
  "017-build-copies": m017,
  "018-call-counts": m018,
  "019-secret-versions": m019,
  "020-data-versions": m020,
  "021-kv-set-function": m021,
  "022-token-epoch": m022,
  "023-kv-set-many": m023,
  "024-render-token-holders": m024,
  "025-token-epoch-at-commit": m025,
  "026-operators": m026,
  "027-oauth": m027,
  "028-domains": m028,
  "029-visitor-kv": m029,
  "030-cache-notify": m030,
  "031-blob-objects": m031,
  "032-visitor-usage": m032,
  "033-key-bytes": m033,
  "034-usage-row-kept": m034,
  "035-orphan-secrets": m035,
  "036-outbox-created": m036,
  "037-snapshot-bytes": m037,
  "038-share-invites-sent": m038,
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
