import type { BucketRule } from "../../http/rate-limit/index.ts";

// Sign-in is not in the spec's table; these ceilings stop password guessing from one address
// and against one account without getting in a person's way.
export const LOGIN_PER_IP: BucketRule = { name: "login:ip", capacity: 10 };
export const LOGIN_PER_ACCOUNT: BucketRule = { name: "login:account", capacity: 10 };
export const SIGNUP_PER_IP: BucketRule = { name: "signup:ip", capacity: 5 };
// Each resend is a mail to someone's inbox: a few an hour's worth, per account.
export const VERIFY_RESEND_PER_USER: BucketRule = { name: "verify-resend:user", capacity: 3, windowMs: 60 * 60 * 1000 };
