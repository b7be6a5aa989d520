import type { FastifySchema, FastifySchemaCompiler } from "fastify";
import SerializerSelector from "@fastify/fast-json-stringify-compiler";

// Fastify compiles every route's validators and response serializers when it starts, and every
// route documents the error envelope for 4xx and 5xx as well as its own answers: about half of a
// server's start went on code for answers most routes never give (measured: buildApp 840 → 370
// ms in-process, warm). Compiling each one when it is first used moves that cost to the first
// request that needs it, a few milliseconds once. Whether every schema compiles at all is held
// by test/http-lazy-schemas.test.ts, which compiles them all eagerly.

type Validator = ReturnType<FastifySchemaCompiler<FastifySchema>>;
type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** Fastify's own serializer factory (fast-json-stringify), each route's serializer built on its first answer. */
export function lazySerializers(): SerializerFactory {
  const eager = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = eager(externalSchemas, options);
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data) => (serialize ??= compile(route))(data);
    };
  };
}

/**
 * `compiler`, each validator compiled on first use. The function Fastify holds stands in for the
 * compiled one entirely: Fastify reads `schemaEnv` (to hand Ajv the parent of a root value it may
 * coerce) before calling and `errors` after, so both pass through, compiling if need be.
 */
export function lazyValidators(compiler: FastifySchemaCompiler<FastifySchema>): FastifySchemaCompiler<FastifySchema> {
  return (route) => {
    let compiled: Validator | undefined;
    const validator = (): Validator => (compiled ??= compiler(route));
    const lazy = (...args: unknown[]) => (validator() as (...args: unknown[]) => unknown)(...args);
    Object.defineProperties(lazy, {
      schemaEnv: { get: () => (validator() as { schemaEnv?: unknown }).schemaEnv },
      errors: { get: () => (validator() as { errors?: unknown }).errors },
    });
    return lazy as Validator;
  };
}
