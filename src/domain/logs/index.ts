export { authorizeLogs } from "./access.ts";
export { AppLogs, type LogListener, type LogTransport } from "./logs.ts";
export { pgLogTransport } from "./pg-transport.ts";
export { matches, RING_LINES, type LogFilter } from "./ring.ts";
export { DEFAULT_LIMIT, parseLogQuery, viewOf, type LogLineView, type RawLogQuery } from "./query.ts";
