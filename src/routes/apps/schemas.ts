import { Type } from "typebox";
import { Timestamp } from "../../http/schemas.ts";

export const AppIdParams = Type.Object({ id: Type.String({ description: "app id (UUID)" }) });

export const IconSchema = Type.Object(
  {
    emoji: Type.String({ description: "one emoji, drawn centred; extra glyphs are dropped" }),
    bg: Type.String({ description: "hex colour #rgb, #rrggbb or #rrggbbaa" }),
  },
  { additionalProperties: false },
);

export const CapabilitiesSchema = Type.Object({
  imports: Type.Array(Type.String({ enum: ["svc:storage/kv@1.0", "svc:storage/blob@1.0", "svc:logging/emit@1.0"] })),
  exports: Type.Array(Type.String()),
  origins: Type.Array(Type.String()),
});

const moduleField = Type.String({ description: "ES module source; exports a literal `manifest` and `default.fetch`; at most 256 KiB" });
const uiField = Type.Optional(Type.String({ description: "inline classic script populating #app; at most 256 KiB" }));
const stylesField = Type.Optional(Type.String({ description: "CSS injected alongside ui" }));

export const CreateBody = Type.Object(
  {
    module: moduleField,
    ui: uiField,
    styles: stylesField,
    pair: Type.Optional(Type.Boolean({ description: "anonymous create only: also mint a device code bound to the app" })),
    label: Type.Optional(Type.String({ maxLength: 80, description: "anonymous create only: label on the pairing approval page" })),
  },
  { additionalProperties: false },
);

export const UpdateBody = Type.Object({ module: moduleField, ui: uiField, styles: stylesField }, { additionalProperties: false });

const Warnings = Type.Optional(Type.Array(Type.String(), { description: "non-blocking publish feedback; the write succeeded" }));

const appFields = {
  id: Type.String({ format: "uuid" }),
  manifestId: Type.String(),
  displayName: Type.String(),
  url: Type.String({ format: "uri" }),
  capabilities: CapabilitiesSchema,
  icon: Type.Union([IconSchema, Type.Null()]),
  claimed: Type.Boolean(),
  revision: Type.Integer({ minimum: 0 }),
  version: Type.String({ description: "manifest.version, or rev-N" }),
};

export const CreateResponse = Type.Object({
  ok: Type.Literal(true),
  ...appFields,
  token: Type.Optional(Type.String({ description: "anonymous create only: the per-app token, shown exactly once" })),
  expiresAt: Type.Optional(Timestamp),
  mcpHint: Type.Optional(
    Type.Object({
      setupUrl: Type.String({ format: "uri" }),
      snippets: Type.Record(Type.String(), Type.String(), { description: "MCP client configuration by client: claude-code, cursor, vscode, curl" }),
    }),
  ),
  pairing: Type.Optional(
    Type.Object({
      device_code: Type.String(),
      user_code: Type.String({ pattern: "^SVC-[A-Z2-9]{6}$" }),
      verification_url: Type.String({ format: "uri" }),
      polling_interval: Type.Integer(),
      expires_in: Type.Integer(),
    }),
  ),
  warnings: Warnings,
});

export const UpdateResponse = Type.Object({ ok: Type.Literal(true), ...appFields, warnings: Warnings });

export const PatchResponse = Type.Object({ ok: Type.Literal(true), id: Type.String({ format: "uuid" }), revision: Type.Integer({ minimum: 0 }), warnings: Warnings });

export const ListRow = Type.Object({
  id: Type.String({ format: "uuid" }),
  role: Type.String({ enum: ["owner", "collaborator", "end-user", "viewer", "team-admin", "team-member"] }),
  manifestId: Type.String(),
  displayName: Type.String(),
  revision: Type.Integer({ minimum: 0 }),
  capabilities: CapabilitiesSchema,
  url: Type.String({ format: "uri" }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
