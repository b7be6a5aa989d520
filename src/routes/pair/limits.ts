import type { BucketRule } from "../../http/rate-limit/index.ts";

// The spec's rate-limit table, rows /api/pair/*.
export const PAIR_START_PER_IP: BucketRule = { name: "pair-start:ip", capacity: 30 };
export const PAIR_POLL_PER_IP: BucketRule = { name: "pair-poll:ip", capacity: 60 };
export const PAIR_APPROVE_PER_USER: BucketRule = { name: "pair-approve:user", capacity: 20 };
