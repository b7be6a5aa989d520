import { apiError, type ApiError, type ErrorKind, type Plan } from "../errors/index.ts";

/** Every plan-dependent number in one table (DECISIONS §9). The spec gives free's; paid ones are ours. */
export interface PlanLimits {
  version_history: number;
  routines_per_app: number;
  routines_per_owner: number;
  webhooks_per_app: number;
  webhooks_per_owner: number;
  concurrent_runs: number;
  runs_per_minute: number;
  delivery_body_bytes: number;
  custom_domain: boolean;
  watermark_removal: boolean;
  teams: boolean;
}

export const PLAN_LIMITS: Record<Plan, PlanLimits> = {
  free: {
    version_history: 20,
    routines_per_app: 3,
    routines_per_owner: 25,
    webhooks_per_app: 3,
    webhooks_per_owner: 25,
    concurrent_runs: 8,
    runs_per_minute: 600,
    delivery_body_bytes: 16 * 1024,
    custom_domain: false,
    watermark_removal: false,
    teams: false,
  },
  pro: {
    version_history: 100,
    routines_per_app: 10,
    routines_per_owner: 100,
    webhooks_per_app: 10,
    webhooks_per_owner: 100,
    concurrent_runs: 16,
    runs_per_minute: 3000,
    delivery_body_bytes: 64 * 1024,
    custom_domain: true,
    watermark_removal: true,
    teams: true,
  },
  business: {
    version_history: 500,
    routines_per_app: 25,
    routines_per_owner: 500,
    webhooks_per_app: 25,
    webhooks_per_owner: 500,
    concurrent_runs: 32,
    runs_per_minute: 10000,
    delivery_body_bytes: 64 * 1024,
    custom_domain: true,
    watermark_removal: true,
    teams: true,
  },
  enterprise: {
    version_history: 2000,
    routines_per_app: 100,
    routines_per_owner: 5000,
    webhooks_per_app: 100,
    webhooks_per_owner: 5000,
    concurrent_runs: 64,
    runs_per_minute: 30000,
    delivery_body_bytes: 64 * 1024,
    custom_domain: true,
    watermark_removal: true,
    teams: true,
  },
};

export function billingUrl(baseUrl: string, handle: string | null): string | undefined {
  return handle === null ? undefined : `${baseUrl}/@${handle}/billing`;
}

/**
 * A plan refusal (spec Errors → Envelope): the kind, and `plan`, `limit`, `max` and the owner's
 * billing page, which every plan refusal carries so a client can explain and offer an upgrade.
 */
export function planRefusal(
  kind: Extract<ErrorKind, `${string}_limit_exceeded`>,
  message: string,
  o: { plan: Plan; limit: keyof PlanLimits; max: number; baseUrl: string; handle: string | null },
): ApiError {
  const upgradeUrl = billingUrl(o.baseUrl, o.handle);
  return apiError(kind, message, { plan: o.plan, limit: o.limit, max: o.max, ...(upgradeUrl === undefined ? {} : { upgradeUrl }) });
}
