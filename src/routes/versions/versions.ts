import { BuildStatusResponse } from "../builds/schemas.ts";
import { replyDeferred } from "../builds/reply.ts";
import { Type } from "typebox";
import { iso } from "../../config/clock.ts";
import type { Services } from "../../services.ts";
import { revisionEtag } from "../../domain/apps/urls.ts";
import { principalOf } from "../../http/auth.ts";
import { ok, Timestamp } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { apiError } from "../../errors/index.ts";

const Params = Type.Object({ id: Type.String({ maxLength: 100 }) });
const RevisionParams = Type.Object({ id: Type.String({ maxLength: 100 }), revision: Type.String({ maxLength: 20 }) });
const security: Record<string, string[]>[] = [{ appToken: [] }, { userToken: [] }, { session: [] }];

const ChangedKeys = Type.Array(Type.Object({ store: Type.Union([Type.Literal("kv"), Type.Literal("blob")]), key: Type.String() }));
const DataChangesSchema = Type.Object({ added: ChangedKeys, changed: ChangedKeys, removed: ChangedKeys, bytes: Type.Integer({ description: "bytes the restore writes back" }) });

const NotRestorableSchema = Type.Object({
  reason: Type.Union([Type.Literal("manifest_id_changed"), Type.Literal("operation_in_use")]),
  manifestId: Type.Optional(Type.String()),
  operations: Type.Optional(Type.Array(Type.String())),
});

/** Versions (issue 16; DECISIONS §9): every kept revision, one revision's source, restore; snapshots. */
export default function versionRoutes(app: App, ctx: Services): void {
  const SnapshotSchema = Type.Object({ id: Type.String(), createdAt: Timestamp, revision: Type.Integer(), keys: Type.Integer(), bytes: Type.Integer() });

  app.post(
    "/app/:id/snapshots",
    {
      schema: {
        tags: ["versions"],
        summary: "Capture the app's KV values and blobs (content-addressed; the newest 10 are kept)",
        security,
        params: Params,
        response: { 201: ok({ snapshot: SnapshotSchema }) },
      },
    },
    async (request, reply) => {
      const snapshot = await ctx.snapshots.create(request.params.id, await principalOf(ctx, request));
      return reply.status(201).send({ ok: true as const, snapshot: { ...snapshot, createdAt: iso(snapshot.createdAt) } });
    },
  );

  app.get(
    "/app/:id/snapshots",
    { schema: { tags: ["versions"], summary: "The app's snapshots, newest first", security, params: Params, response: { 200: ok({ snapshots: Type.Array(SnapshotSchema) }) } } },
    async (request) => {
      const snapshots = await ctx.snapshots.list(request.params.id, await principalOf(ctx, request));
      return { ok: true as const, snapshots: snapshots.map((s) => ({ ...s, createdAt: iso(s.createdAt) })) };
    },
  );

  app.get(
    "/app/:id/versions",
    {
      schema: {
        tags: ["versions"],
        summary: "The kept revisions, newest first, each with whether it can be restored today and why not",
        security,
        params: Params,
        response: {
          200: ok({
            versions: Type.Array(
              Type.Object({ revision: Type.Integer(), createdAt: Timestamp, sizeBytes: Type.Integer(), restorable: Type.Boolean(), notRestorable: Type.Optional(NotRestorableSchema) }),
            ),
          }),
        },
      },
    },
    async (request) => {
      const versions = await ctx.versions.list(request.params.id, await principalOf(ctx, request));
      return { ok: true as const, versions: versions.map((v) => ({ ...v, createdAt: iso(v.createdAt) })) };
    },
  );

  app.get(
    "/app/:id/versions/:revision",
    {
      schema: {
        tags: ["versions"],
        summary: "One kept revision's source",
        security,
        params: RevisionParams,
        response: {
          200: ok({ id: Type.String(), revision: Type.Integer(), module: Type.String(), ui: Type.Union([Type.String(), Type.Null()]), styles: Type.Union([Type.String(), Type.Null()]) }),
        },
      },
    },
    async (request) => {
      const { app: record, code } = await ctx.versions.get(request.params.id, request.params.revision, await principalOf(ctx, request));
      return { ok: true as const, id: record.id, revision: code.revision, module: code.module, ui: code.ui, styles: code.styles };
    },
  );

  app.post(
    "/app/:id/versions/:revision/restore",
    {
      schema: {
        tags: ["versions"],
        summary: 'Publish a kept revision\'s source as a new revision; If-Match: "N" (or expected_revision) required',
        security,
        params: RevisionParams,
        headers: Type.Object({ "if-match": Type.Optional(Type.String()) }),
        body: Type.Optional(
          Type.Object(
            {
              expected_revision: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "alternative to If-Match" })),
              force: Type.Optional(Type.Boolean({ description: "restore even though routines or webhooks call operations the revision lacks" })),
              snapshot: Type.Optional(Type.String({ maxLength: 100, description: "a snapshot id: its KV values and blobs come back with the code, in one transaction" })),
              dry_run: Type.Optional(Type.Boolean({ description: "with snapshot: answer what would change in the data, and change nothing" })),
            },
            { additionalProperties: false },
          ),
        ),
        response: {
          200: Type.Union([
            ok({ changes: DataChangesSchema }),
            ok({
            id: Type.String(),
            revision: Type.Integer(),
            restoredFrom: Type.Integer(),
            unsetSecrets: Type.Array(Type.String(), { description: "secrets the restored code reads that have no value now" }),
            warnings: Type.Optional(Type.Array(Type.String())),
          }),
          ]),
          202: BuildStatusResponse,
        },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const actor = await principalOf(ctx, request);
      if (body.dry_run === true) {
        if (body.snapshot === undefined) throw apiError("invalid_request", "dry_run compares a snapshot's data with the app's; name the snapshot");
        return { ok: true as const, changes: await ctx.versions.dryRun(request.params.id, request.params.revision, actor, body.snapshot) };
      }
      const result = await ctx.versions.restore(request.params.id, request.params.revision, actor, {
        ...(request.headers["if-match"] === undefined ? {} : { ifMatch: request.headers["if-match"] }),
        ...(body.expected_revision === undefined ? {} : { expectedRevision: body.expected_revision }),
        ...(body.force === undefined ? {} : { force: body.force }),
        ...(body.snapshot === undefined ? {} : { snapshot: body.snapshot }),
      });
      if ("deferred" in result) return replyDeferred(ctx, request, reply, result.deferred, actor);
      void reply.header("ETag", revisionEtag(result.app.revision));
      const warnings = [...result.warnings, ...result.unsetSecrets.map((name) => `the restored code reads secret ${name}, which is not set`)];
      return {
        ok: true as const,
        id: result.app.id,
        revision: result.app.revision,
        restoredFrom: result.restoredFrom,
        unsetSecrets: result.unsetSecrets,
        ...(warnings.length === 0 ? {} : { warnings }),
      };
    },
  );
}
