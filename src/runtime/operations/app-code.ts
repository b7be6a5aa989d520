import type { AppCode } from "../executor/types.ts";
import type { RuntimeManifest } from "../ports.ts";

/**
 * What the executor builds an app's isolate from: the module as written, or the bundle a build
 * made of it when it imports npm packages. Any `node:` import needs workerd's nodejs_compat in
 * the app's isolate. The same for a published revision (the code source) and for code a write
 * is about to publish (AppRunner.stage), so that the two build the same isolate.
 */
export function appCode(module: string, manifest: RuntimeManifest, bundle?: { module: string; nodeBuiltins: boolean }): AppCode {
  // The write's parse allowed only listed built-ins; any mention turns the flag on (harmless if spurious).
  const nodeCompat = bundle === undefined ? module.includes('"node:') || module.includes("'node:") : bundle.nodeBuiltins;
  return {
    nodeCompat,
    module: bundle?.module ?? module,
    imports: [...manifest.capabilities.imports],
    origins: [...manifest.capabilities.origins],
    routes: manifest.routes,
  };
}
