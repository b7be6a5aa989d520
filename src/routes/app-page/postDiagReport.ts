import { Type, type Static } from "typebox";
import type { Services } from "../../services.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import { sourcePosition } from "../../domain/diagnostics/index.ts";
import { apiError } from "../../errors/index.ts";
import { principalWithQueryToken } from "../../http/render-auth.ts";
import { nestingError } from "../../http/json-body.ts";
import { redactUrl } from "../../http/logging.ts";
import { OkOnly } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";
import { requireReporter } from "./credentials.ts";
import { reportLimits } from "./reportLimits.ts";

/** Spec Limits: a diag report body is at most 16 KiB. */
export const DIAG_REPORT_MAX_BYTES = 16 * 1024;

const JsError = Type.Object(
  {
    message: Type.String(),
    source: Type.Optional(Type.String()),
    // Bounded: JSON's 1e400 parses to Infinity, which a bare integer check lets through.
    line: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    col: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    stack: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
// The browser's CSP report formats: `report-uri` (application/csp-report) and the Reporting API.
const Violation = Type.Record(Type.String(), Type.Unknown());
const CspReport = Type.Object({ "csp-report": Violation });
const ReportsJson = Type.Array(Type.Object({ type: Type.String(), body: Violation }, { additionalProperties: true }), { maxItems: 20 });

type Body = Static<typeof JsError> | Static<typeof CspReport> | Static<typeof ReportsJson>;

export default function postDiagReport(app: App, ctx: Services): void {
  void app.register((scope: App, _options, done) => {
    for (const type of ["application/csp-report", "application/reports+json"]) {
      scope.addContentTypeParser(type, { parseAs: "string" }, (_request, body, parsed) => {
        const refused = nestingError(String(body), "the report");
        if (refused !== null) return parsed(refused, undefined);
        try {
          parsed(null, JSON.parse(String(body)) as unknown);
        } catch {
          parsed(apiError("invalid_request", "the report is not valid JSON"), undefined);
        }
      });
    }
    scope.post(
      "/app/:id/diag/report",
      {
        bodyLimit: DIAG_REPORT_MAX_BYTES,
        onRequest: reportLimits(ctx, "diag_report"),
        schema: {
          tags: ["web"],
          summary: "Report a runtime error from the page, or a CSP violation in the browser's report format, into diag and activity",
          security: [{ renderToken: [] }, { queryRenderToken: [] }, { appToken: [] }, { userToken: [] }],
          params: AppIdParams,
          querystring: Type.Object({ t: Type.Optional(Type.String()) }),
          body: Type.Union([JsError, CspReport, ReportsJson]),
          response: { 200: OkOnly },
        },
      },
      async (request) => {
        const record = await ctx.apps.find(request.params.id);
        await requireReporter(ctx, await principalWithQueryToken(ctx, request), record);
        for (const entry of toEntries(request.body)) await recordEntry(ctx, record, entry);
        return { ok: true as const };
      },
    );
    done();
  });
}

interface Entry {
  message: string;
  source: string;
  line: number;
  col: number;
  stack: string;
  data: Record<string, unknown>;
}

function toEntries(body: Body): Entry[] {
  if (Array.isArray(body)) return body.filter((r) => r.type === "csp-violation").map((r) => violation(r.body, "reporting-api"));
  if ("csp-report" in body) return [violation(body["csp-report"], "report-uri")];
  return [{ message: body.message, source: body.source ?? "", line: body.line ?? 0, col: body.col ?? 0, stack: body.stack ?? "", data: { type: "error" } }];
}

/** Both CSP formats name the same facts, kebab-case in one and camelCase in the other. */
function violation(report: Record<string, unknown>, format: string): Entry {
  const field = (...names: string[]) => {
    for (const name of names) if (typeof report[name] === "string" || typeof report[name] === "number") return String(report[name]);
    return "";
  };
  const directive = field("effective-directive", "effectiveDirective", "violated-directive");
  // The blocked address may carry a page's render token (`?t=`): cut as request logs cut it.
  const blocked = redactUrl(field("blocked-uri", "blockedURL"));
  return {
    message: `CSP blocked ${blocked === "" ? "a resource" : blocked} (${directive})`,
    source: field("source-file", "sourceFile", "document-uri", "documentURL").replace(/\?.*$/, ""),
    line: sourcePosition(Number(field("line-number", "lineNumber"))),
    col: sourcePosition(Number(field("column-number", "columnNumber"))),
    stack: "",
    data: { type: "csp", format, directive, blocked },
  };
}

async function recordEntry(ctx: Services, app: AppRecord, entry: Entry): Promise<void> {
  ctx.diag.push(app.id, { message: entry.message, source: entry.source, line: entry.line, col: entry.col, stack: entry.stack });
  await ctx.activity.record(app.id, "diag_report", app.revision, entry.message, {
    ...entry.data,
    message: entry.message,
    source: entry.source,
    line: entry.line,
    col: entry.col,
  });
}
