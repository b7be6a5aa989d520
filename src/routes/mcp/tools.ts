import { allowToolRoute } from "../../http/tool-layer.ts";
/**
 * The MCP tools of `POST /mcp` (DECISIONS §11): each is the twin of one REST route, and runs
 * it (tools.ts → invoke.ts), so its input schema, its checks, its answer and its refusals are
 * the route's own. `scope` says who sees it: `anonymous` tools are all a caller without a token
 * gets; `all` ones only with `?tools=all`.
 */
export interface ToolSpec {
  name: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** The REST route, in Fastify's `:param` form. */
  path: string;
  description: string;
  scope: "default" | "all" | "anonymous" | "both";
  /** The route's body is one free-form value (an op's input): the tool takes it as `input`. */
  bodyAsInput?: boolean;
  /** Query parameters of the route the tool does not offer (a stream a tool call cannot hold open). */
  hiddenQuery?: readonly string[];
}

export const TOOLS: readonly ToolSpec[] = [
  { name: "create_app", method: "POST", path: "/app", scope: "both", description: "Create an app from an ES module (and optional UI script and CSS). Without a token the app is anonymous: its token comes back once, and it lives 7 days unless claimed. With a token, a module whose manifest id you already use overwrites that app." },
  { name: "list_apps", method: "GET", path: "/app", scope: "default", description: "Your apps, newest first." },
  { name: "describe_app", method: "GET", path: "/app/:id/describe", scope: "default", description: "An app's name, URL and operations with their input and output schemas." },
  { name: "get_source", method: "GET", path: "/app/:id/source", scope: "default", description: "An app's current module, UI and styles, with its revision (send it back as expected_revision when editing)." },
  { name: "edit_source", method: "PATCH", path: "/app/:id/source", scope: "default", description: "Exact-string edits to an app's source, applied together at expected_revision; each old_string must occur exactly once." },
  { name: "update_app", method: "PUT", path: "/app/:id", scope: "default", description: "Replace an app's whole source (a new revision). The manifest id cannot change." },
  { name: "call_operation", method: "POST", path: "/app/:id/api/:operation", scope: "default", bodyAsInput: true, description: "Run one of an app's operations with `input` (an object matching its input schema); returns {ok, value}." },
  { name: "get_diagnostics", method: "GET", path: "/app/:id/diag", scope: "default", description: "An app's recent runtime errors and logs (newest 50)." },
  { name: "get_logs", method: "GET", path: "/app/:id/logs", scope: "default", hiddenQuery: ["follow", "t"], description: "What an app's code printed (console.log/info/warn/error and env.LOG) during its op calls, newest first, each line with its op, level and request id. Filter with op, level (that level and above) and since." },
  { name: "get_activity", method: "GET", path: "/app/:id/activity", scope: "default", description: "An app's durable events: failed calls, diagnostic reports, contract warnings." },
  { name: "list_secret_names", method: "GET", path: "/app/:id/secrets", scope: "default", description: "The names of an app's secrets (never their values)." },
  { name: "set_secret", method: "PUT", path: "/app/:id/secrets/:name", scope: "default", description: "Set a secret the app reads as env.NAME." },
  { name: "create_routine", method: "POST", path: "/api/v1/apps/:appId/routines", scope: "default", description: "Run one of an app's operations on a schedule." },
  { name: "list_routines", method: "GET", path: "/api/v1/routines", scope: "default", description: "Your routines across your apps." },
  { name: "update_routine", method: "PATCH", path: "/api/v1/routines/:id", scope: "default", description: "Change a routine's schedule, input, or enable/disable it." },
  { name: "create_webhook", method: "POST", path: "/api/v1/apps/:appId/webhooks", scope: "default", description: "A URL that runs one of an app's operations when another service posts to it; its secret is shown once." },
  { name: "list_webhooks", method: "GET", path: "/api/v1/webhooks", scope: "default", description: "Your webhooks across your apps." },
  { name: "update_webhook", method: "PATCH", path: "/api/v1/webhooks/:id", scope: "default", description: "Rename a webhook, enable or disable it, or rotate its secret (rotate_secret: true; the new secret is shown once)." },
  { name: "get_build", method: "GET", path: "/api/v1/builds/:buildId", scope: "default", description: "A build's status (a write whose npm imports are being bundled answers with one); poll until published or failed." },
  { name: "start_pairing", method: "POST", path: "/api/pair/start", scope: "anonymous", description: "Start pairing this agent with a person's account: show them the user code and verification URL, then poll_pairing." },
  { name: "poll_pairing", method: "POST", path: "/api/pair/poll", scope: "anonymous", description: "Poll a pairing started with start_pairing; once approved it returns a user token to send as a bearer token." },
  { name: "copy_app", method: "POST", path: "/app/:id/copy", scope: "all", description: "Copy an app into a new private app of yours (with include_data, its data too)." },
  { name: "list_versions", method: "GET", path: "/app/:id/versions", scope: "all", description: "An app's kept revisions." },
  { name: "get_version", method: "GET", path: "/app/:id/versions/:revision", scope: "all", description: "One kept revision's source." },
  { name: "restore_version", method: "POST", path: "/app/:id/versions/:revision/restore", scope: "all", description: "Make an old revision current again (a new revision), at expected_revision." },
  { name: "delete_app", method: "DELETE", path: "/app/:id", scope: "all", description: "Delete an app and everything it stores." },
  { name: "delete_routine", method: "DELETE", path: "/api/v1/routines/:id", scope: "all", description: "Remove a routine." },
  { name: "delete_webhook", method: "DELETE", path: "/api/v1/webhooks/:id", scope: "all", description: "Remove a webhook." },
  { name: "list_deliveries", method: "GET", path: "/api/v1/webhooks/:id/deliveries", scope: "all", description: "A webhook's recent deliveries." },
  { name: "add_domain", method: "POST", path: "/api/v1/apps/:appId/domains", scope: "all", description: "Serve an app at your own hostname (pro plan): returns the TXT record to create; then verify it with the REST route or the console." },
  { name: "list_domains", method: "GET", path: "/api/v1/apps/:appId/domains", scope: "all", description: "An app's custom domains with their states (pending, verified, failing) and TXT records." },
];

// The carried OAuth principal counts on these routes only (http/tool-layer.ts).
for (const tool of TOOLS) allowToolRoute(tool.method, tool.path);

/** MCP tool annotations (hints a client shows or acts on; never a security boundary). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The hints of each /mcp tool: reads are read-only and idempotent; deletes, replacements and
 * updates may destroy what was there; call_operation runs app code that may write and fetch the
 * outside world. By the route's method, with the tools that differ named.
 */
const HINT_OVERRIDES: Readonly<Record<string, Partial<ToolAnnotations>>> = {
  // With a token, a module whose manifest id you already use overwrites that app.
  create_app: { destructiveHint: true },
  call_operation: { destructiveHint: true, openWorldHint: true },
  set_secret: { destructiveHint: true, idempotentHint: true },
  restore_version: { destructiveHint: false },
  copy_app: { destructiveHint: false },
  start_pairing: { destructiveHint: false },
  poll_pairing: { destructiveHint: false },
  add_domain: { destructiveHint: false },
};

export function annotationsOf(spec: Pick<ToolSpec, "name" | "method">): ToolAnnotations {
  const read = spec.method === "GET";
  const base: ToolAnnotations = {
    readOnlyHint: read,
    destructiveHint: spec.method === "DELETE" || spec.method === "PUT" || spec.method === "PATCH",
    idempotentHint: read || spec.method === "DELETE" || spec.method === "PUT",
    openWorldHint: false,
  };
  return { ...base, ...HINT_OVERRIDES[spec.name] };
}

/** The tools a caller is offered: without a token only the anonymous ones. */
export function toolsFor(authenticated: boolean, all: boolean): ToolSpec[] {
  return TOOLS.filter((tool) =>
    authenticated ? tool.scope === "both" || tool.scope === "default" || (all && tool.scope === "all") : tool.scope === "anonymous" || tool.scope === "both",
  );
}
