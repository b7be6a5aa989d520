import { apiError } from "../../errors/index.ts";
import { can } from "../access/access.ts";
import type { AppRecord } from "../apps/queries.ts";
import type { DiagnosticsCaller, RoleOracle } from "../diagnostics/access.ts";

/**
 * `GET /app/{id}/logs` (DECISIONS §18: source:read, like diag): the app's own token, or the
 * credential of someone who may read its source (owner, team members, collaborators), directly
 * or through a render token bound to the app. Viewers and end-users run the app but never see
 * its code, and a line can show as much of it as a stack does: 403. No credential: 401.
 */
export async function authorizeLogs(caller: DiagnosticsCaller, app: AppRecord, apps: RoleOracle): Promise<void> {
  if (caller === null) throw apiError("unauthorized", "send the app token, a user token of someone who may read the app's source, or a render token");
  if (caller.kind === "app" && caller.appId === app.id) return;
  const userId = caller.kind === "user" ? caller.userId : caller.kind === "render" && caller.appId === app.id ? caller.userId : null;
  if (userId !== null && can(await apps.roleOf({ kind: "user", userId }, app), "source:read")) return;
  throw apiError("forbidden", "only those who may read the app's source may read its logs");
}
