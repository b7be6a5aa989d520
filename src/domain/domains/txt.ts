import { Resolver } from "node:dns/promises";
import { apiError } from "../../errors/index.ts";

/** DECISIONS §12: a look-up gives up after 3 s. */
const LOOKUP_TIMEOUT_MS = 3_000;

/** What proves a hostname: the TXT records at `_svc-verify.<hostname>`, joined per record. */
export interface TxtLookup {
  txt(name: string): Promise<string[]>;
}

/**
 * node:dns's resolver, at DNS_RESOLVER when set (tests run their own server on loopback), else
 * the system's. A name with no such record (NXDOMAIN, no data) is an empty list; every other
 * failure (a timeout, SERVFAIL, a refused connection) is 503 `domain_provider_unavailable`, as it
 * says nothing about whether the record is there.
 */
export function dnsTxtLookup(server: string | null): TxtLookup {
  const resolver = new Resolver({ timeout: LOOKUP_TIMEOUT_MS, tries: 1 });
  if (server !== null) resolver.setServers([server]);
  return {
    async txt(name) {
      try {
        const records = await resolver.resolveTxt(name);
        return records.map((chunks) => chunks.join(""));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOTFOUND" || code === "ENODATA") return [];
        throw apiError("domain_provider_unavailable", `the DNS look-up of ${name} failed (${code ?? "error"}); try again later`);
      }
    },
  };
}
