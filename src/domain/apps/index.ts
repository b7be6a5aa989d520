// What other parts of Brickyard use from the app lifecycle. `ctx.apps` is the service; the rest
// are pure helpers that need no context.
export { Apps, UNCLAIMED_TTL_MS, type ActiveCode, type CreateResult, type WriteResult } from "./apps.ts";
export { can, directRole, requirePermission, type AccessSubject, type Actor, type AppPermission, type AppRole } from "../access/access.ts";
export type { AppEvent, AppListener } from "./events.ts";
export { DEFAULT_ICON, iconSvg, type Icon } from "../source/icon.ts";
export type { Capabilities, CapabilityImport, Manifest, RouteSpec } from "../source/manifest-types.ts";
export type { BoundPairing, PairingSeam } from "./pairing-seam.ts";
export type { AppRecord } from "./queries.ts";
export { canonicalUrl, revisionEtag, uuidUrl } from "./urls.ts";
