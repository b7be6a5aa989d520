// Runs INSIDE workerd, in each app's isolate, before any of the app's code: the shim imports it
// first, and a module's imports are evaluated in the order they are written. workerd runs with
// V8's --expose-gc (workerd-config.ts); this keeps `gc` for the shim alone and clears the global
// (workerd makes it writable but not configurable: it can be overwritten, not deleted), so app
// code can neither see nor call it.
const exposed = globalThis.gc;
globalThis.gc = undefined;

/** A full collection of this isolate's heap (a no-op where the flag is off). */
export const collect = typeof exposed === "function" ? () => exposed() : () => undefined;
