// The buckets moved to domain/ so op-call ceilings can use them without importing HTTP code;
// this re-export keeps existing imports working.
export * from "../../lib/rate-limit.ts";
