import { createHash } from "node:crypto";
import { request } from "undici";
import { OffThread } from "../../offthread/index.ts";
import { BuildError } from "./build-error.ts";
import { MAX_VERSIONS, type Packument, type PackumentVersion, type Parsed } from "./packument.ts";

export type { Packument, PackumentVersion } from "./packument.ts";

export const TARBALL_CAP_BYTES = 20 * 1024 * 1024;
// A packument of a package with thousands of versions runs to tens of MiB; past this, refuse.
const PACKUMENT_CAP_BYTES = 64 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;

export interface RegistryOptions {
  url: string;
  /** Sent as a bearer token, and only to the registry's own origin. */
  token?: string;
  /** Versions younger than this are passed over (NPM_MIN_RELEASE_AGE); needs full packuments. */
  minReleaseAgeMs: number;
  /** How long one request may take, its body included (30 s; tests shorten it). */
  requestTimeoutMs?: number;
}

/**
 * The npm registry protocol, the two requests a build needs: a package's packument and a
 * version's tarball. npm's own fetchers need Node 22 (ARCHITECTURE.md), so this is ours. A
 * registry that cannot be reached, or answers 5xx, is `app_build_unavailable` (retryable);
 * a package or version it does not have is `app_build_failed`.
 */
export class Registry {
  private readonly origin: string;
  private readonly base: string;

  constructor(private readonly options: RegistryOptions) {
    const url = new URL(options.url);
    this.origin = url.origin;
    this.base = url.href.endsWith("/") ? url.href : `${url.href}/`;
  }

  get minReleaseAgeMs(): number {
    return this.options.minReleaseAgeMs;
  }

  /** `signal`: the build's own (its deadline); a request under way when it fires ends at once. */
  async packument(name: string, specifier: string, signal?: AbortSignal): Promise<Packument> {
    // Scoped names keep their @ and escape the slash: /@scope%2fname.
    const url = `${this.base}${name.startsWith("@") ? `@${encodeURIComponent(name.slice(1))}` : encodeURIComponent(name)}`;
    // The abbreviated form is a fraction of the size but has no publication times.
    const accept = this.options.minReleaseAgeMs > 0 ? "application/json" : "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8";
    const body = await this.get(url, accept, PACKUMENT_CAP_BYTES, specifier, signal);
    if (body === null) throw new BuildError("app_build_failed", `the registry has no package ${name}`, { specifier });
    // Up to 64 MiB of JSON: parsed in the worker thread, never on Node's.
    const parsed = await OffThread.shared.run<Parsed>({ type: "packument", body }).catch((error: unknown) => ({ refused: "unavailable" as const, detail: (error as Error).message }));
    if ("packument" in parsed) return parsed.packument;
    if (parsed.refused === "versions") throw new BuildError("app_build_failed", `${name} lists ${parsed.detail} versions; a build reads packages of at most ${MAX_VERSIONS}`, { specifier });
    throw new BuildError("app_build_unavailable", `the registry's answer for ${name} is not a packument`, { specifier });
  }

  /** The tarball's bytes, checked against the version's sha512 integrity before anything reads them. */
  async tarball(name: string, version: PackumentVersion, specifier: string, signal?: AbortSignal): Promise<Buffer> {
    const expected = sha512Of(version.dist.integrity);
    if (expected === null) throw new BuildError("app_build_failed", `${name}@${version.version} has no sha512 integrity in the registry; it cannot be checked`, { specifier });
    const body = await this.get(version.dist.tarball, "application/octet-stream", TARBALL_CAP_BYTES, specifier, signal);
    if (body === null) throw new BuildError("app_build_failed", `the registry has no tarball for ${name}@${version.version}`, { specifier });
    if (!createHash("sha512").update(body).digest().equals(expected)) {
      throw new BuildError("app_build_failed", `${name}@${version.version}'s tarball does not match its integrity; refused`, { specifier });
    }
    return body;
  }

  /** The body, or null on 404; capped at `cap` bytes while it streams in. */
  private async get(url: string, accept: string, cap: number, specifier: string, build?: AbortSignal): Promise<Buffer | null> {
    build?.throwIfAborted();
    const headers: Record<string, string> = { accept };
    if (this.options.token !== undefined && new URL(url).origin === this.origin) headers["authorization"] = `Bearer ${this.options.token}`;
    // The whole request, body included: undici's own timeouts bound only the silence between
    // chunks, and a registry dripping a byte every few seconds held the build's runner for good.
    const timeoutMs = this.options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = build === undefined ? timeout : AbortSignal.any([timeout, build]);
    const unreachable = (error: unknown) => {
      if (build?.aborted === true) return build.reason as Error;
      return new BuildError("app_build_unavailable", timeout.aborted ? `the npm registry took over ${timeoutMs / 1000} s to answer for ${shown(url)}` : `the npm registry cannot be reached (${(error as Error).message})`, { specifier });
    };
    let res;
    try {
      res = await request(url, { headers, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal });
    } catch (error) {
      throw unreachable(error);
    }
    if (res.statusCode === 404) {
      await res.body.dump().catch(() => undefined);
      return null;
    }
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      throw new BuildError("app_build_unavailable", `the npm registry answered ${res.statusCode} for ${shown(url)}`, { specifier });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > cap) {
          res.body.destroy();
          throw new BuildError("app_build_failed", `${shown(url)} is over the ${cap / 1024 / 1024} MiB cap`, { specifier });
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      throw error instanceof BuildError ? error : unreachable(error);
    }
    return Buffer.concat(chunks);
  }
}

/** A URL as a build's error may show it to the app's writer: without the registry's user and password. */
function shown(url: string): string {
  const parsed = new URL(url);
  parsed.username = "";
  parsed.password = "";
  return parsed.href;
}

/** The sha512 digest an SRI string (`sha512-<base64> …`) names, or null when it names none. */
export function sha512Of(integrity: string | undefined): Buffer | null {
  for (const part of (integrity ?? "").split(/\s+/)) {
    if (part.startsWith("sha512-")) return Buffer.from(part.slice("sha512-".length).split("?")[0] ?? "", "base64");
  }
  return null;
}
