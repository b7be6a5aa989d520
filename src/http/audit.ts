import type { FastifyRequest } from "fastify";
import type { AuditContext } from "../domain/operators/index.ts";
import { clientIp, type Principal } from "./auth.ts";

/** Who is acting, as the audit log records it (DECISIONS §15), and the address they came from. */
export function auditContext(request: FastifyRequest, principal: Principal | null): AuditContext {
  const ip = clientIp(request);
  if (principal === null) return { actor: { kind: "system" }, ip };
  if (principal.kind === "user") return { actor: { kind: "user", id: principal.userId, handle: null }, ip };
  if (principal.kind === "render" && principal.userId !== null) return { actor: { kind: "user", id: principal.userId, handle: null }, ip };
  return { actor: { kind: "app", id: principal.appId }, ip };
}
