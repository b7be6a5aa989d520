// The architecture as rules `npm run check` fails on (dependency-cruiser). Layers, lowest first:
// each may import only layers below it (and its own); the runtime is reached through its entry
// only; no import cycles. README.md ("How it fits together") draws the same map.
const LAYERS = [
  ["errors"],
  ["config"],
  ["lib", "schemas", "metrics"],
  ["store", "blobs", "offthread"],
  ["runtime"],
  ["domain"],
  ["http"],
  ["web"],
  ["routes", "scheduler", "services.ts"],
  ["app.ts", "context.ts"],
  ["start"],
];

const path = (names) => `^src/(${names.map((n) => n.replace(".", "\\.")).join("|")})(/|$)`;

const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.join("-").replace(/\.ts/g, "")}`,
  comment: `${layer.join(", ")} may not import a layer above it (${LAYERS.slice(i + 1).flat().join(", ")})`,
  severity: "error",
  from: { path: path(layer) },
  to: { path: path(LAYERS.slice(i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: "runtime-entry",
      comment: "outside src/runtime/, import the runtime only through src/runtime/index.ts",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/runtime/" },
      to: { path: "^src/runtime/", pathNot: "^src/runtime/index\\.ts$" },
    },
    {
      name: "routes-not-scheduler",
      comment: "routes and the scheduler are siblings: routes never import the scheduler",
      severity: "error",
      from: { path: "^src/routes/" },
      to: { path: "^src/scheduler/" },
    },
    {
      name: "scheduler-not-routes",
      comment: "the scheduler never imports routes",
      severity: "error",
      from: { path: "^src/scheduler/" },
      to: { path: "^src/routes/" },
    },
    {
      name: "no-circular",
      comment: "no import cycles in src/, type-only imports included",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^src/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs"] },
  },
};
