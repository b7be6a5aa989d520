export { Operations, OPERATION_DEADLINE_MS, type AppRecord, type OperationCall, type Role, type Trigger } from "./operations.ts";
