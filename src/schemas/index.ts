export { checkValue, VALIDATION_BUDGET, type CheckResult } from "./app-ajv.ts";
export { compileSchemaSource } from "./compile.ts";
export { MAX_EXPANSION, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, schemaBounds, SchemaCostError } from "./cost.ts";
