import type { Kysely } from "kysely";
import type { Database } from "../../store/index.ts";
import type { Actor } from "../access/access.ts";
import type { PreparedSource } from "../source/source.ts";

import type { BuildIntent } from "../../store/schema/builds.ts";

export type { BuildIntent };

/** A write that cannot publish until its `npm:` imports are bundled. */
export interface BuildRequest {
  intent: BuildIntent;
  /** The app it publishes to; for a create, the id reserved for it. */
  appId: string;
  actor: Actor;
  /** Publish only over this revision (compare-and-set); null: over whatever is current. */
  baseRevision: number | null;
  prepared: PreparedSource;
  /** The revision whose exact versions unchanged ranges keep; null for none. */
  lockFrom: number | null;
  /** The app `lockFrom` is a revision of, when not `appId` (a copy's source). */
  lockFromApp?: string;
  /** A copy: what it carries over when it publishes. */
  copy?: CopyPlan;
  idempotencyKey?: string;
}

/**
 * Where builds plug into the app lifecycle (like PairingSeam): the builds service implements
 * it and registers it with `apps.setBuilds(…)`. Without one, a module with `npm:` imports is
 * refused with `app_build_unavailable`.
 */
export interface BuildSeam {
  /** The digest of a bundle already made for exactly this source, or null. */
  bundled(prepared: PreparedSource): Promise<string | null>;
  /** Queues a build; `within` runs in the same transaction (an anonymous create's token). Returns its id. */
  accept(request: BuildRequest, within?: (trx: Kysely<Database>) => Promise<void>): Promise<string>;
  /** A write that publishes at once came: every build of the app waiting or running is superseded, in its transaction. */
  supersede(trx: Kysely<Database>, appId: string): Promise<void>;
  /** In the publishing transaction: whether the build is still active, its row held until commit (a write superseding it waits). */
  holdForPublish(trx: Kysely<Database>, buildId: string): Promise<boolean>;
  /** The build waiting or running that was accepted with `idempotencyKey`, or null. */
  activeByKey(idempotencyKey: string): Promise<{ buildId: string; appId: string; copy: CopyPlan | null } | null>;
}

/** What a copy that needs a build carries over when it publishes (copies.ts). */
export interface CopyPlan {
  sourceAppId: string;
  includeData: boolean;
  copyKind: "app" | "template";
  /** The request's idempotency_key, recorded with the copy when it publishes (replays find it). */
  idempotency?: { key: string; bodyHash: string };
}

/** A write answered with 202: the build that will publish it. */
export interface BuildDeferred {
  buildId: string;
  /** The app it publishes to (reserved, for a create). */
  appId: string;
  /** Anonymous creates only: the per-app token, returned this once. */
  token: string | null;
}
