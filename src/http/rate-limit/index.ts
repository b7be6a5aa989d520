export { PARK_FIRST_MS, PARK_MAX_MS, RateLimiter, type BucketCheck, type BucketRule, type Decision, type Rung } from "./buckets.ts";
export { enforceRateLimit, rateLimitHeaders, takeOrRefuse, type RateLimitOptions } from "./enforce.ts";
