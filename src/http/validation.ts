import type { FastifySchema, FastifySchemaCompiler } from "fastify";
import { Ajv, type Options } from "ajv";
import addFormats from "ajv-formats";

// Request bodies are validated exactly: no coercion ("5" is not 5) and unknown properties are
// refused rather than silently stripped (Fastify's default), as the spec requires. Query strings,
// params and headers arrive as text, so those coerce.
const common: Options = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false };

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ ...common, coerceTypes: coerce ? "array" : false });
  addFormats.default(ajv);
  return ajv;
}

export function validatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  const body = makeAjv(false);
  const text = makeAjv(true);
  return ({ schema, httpPart }) => (httpPart === "body" ? body : text).compile(schema);
}
