import type { ValidateFunction } from "ajv/dist/2020.js";
import { OffThread } from "../../offthread/index.ts";
import { loadValidator } from "../../schemas/runtime.ts";

const CACHE_MAX = 2_000;

/**
 * Validators of app schemas, compiled in the off-thread worker and only loaded here (Node's
 * thread evaluates ajv's generated source, it never compiles), cached by schema text.
 */
export class Validators {
  /** Promises, so that many first calls of one schema at once compile and load it once. */
  private readonly cache = new Map<string, Promise<ValidateFunction>>();

  constructor(private readonly worker = OffThread.shared) {}

  /** Process-wide instance: apps share schemas often, and one cache serves all. */
  static readonly shared = new Validators();

  /** The validator of a schema that was checked when written; rejects when unusable. */
  of(schema: unknown): Promise<ValidateFunction> {
    const key = JSON.stringify(schema);
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const validate = this.worker.run<string>({ type: "compile", schema }).then(loadValidator);
    // A refusal is not kept: the next call gets the same answer from a fresh try.
    void validate.catch(() => this.cache.delete(key));
    this.cache.set(key, validate);
    if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value ?? key);
    return validate;
  }
}
