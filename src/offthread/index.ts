export { JOB_DEADLINE_MS, OffThread } from "./pool.ts";
