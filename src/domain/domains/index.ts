export { Domains, MISSING_FOR_MS, RECHECK_EVERY_MS, type DomainView } from "./domains.ts";
export { DomainHosts } from "./hosts.ts";
export { hostKey, normaliseHostname } from "./hostname.ts";
export { dnsTxtLookup, type TxtLookup } from "./txt.ts";
export { VisitorPasses } from "./visitors.ts";
