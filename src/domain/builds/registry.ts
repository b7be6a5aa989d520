import { createHash } from "node:crypto";
import { request } from "undici";
import { BuildError } from "./build-error.ts";

export const TARBALL_CAP_BYTES = 20 * 1024 * 1024;
// A packument of a package with thousands of versions runs to tens of MiB; past this, refuse.
const PACKUMENT_CAP_BYTES = 64 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;

/** One published version as a packument lists it: what resolution and fetching need. */
export interface PackumentVersion {
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  dist: { tarball: string; integrity?: string };
}

export interface Packument {
  name: string;
  "dist-tags"?: Record<string, string>;
  versions: Record<string, PackumentVersion>;
  /** Publication times by version (full packuments only). */
  time?: Record<string, string>;
}

export interface RegistryOptions {
  url: string;
  /** Sent as a bearer token, and only to the registry's own origin. */
  token?: string;
  /** Versions younger than this are passed over (NPM_MIN_RELEASE_AGE); needs full packuments. */
  minReleaseAgeMs: number;
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

  async packument(name: string, specifier: string): Promise<Packument> {
    // Scoped names keep their @ and escape the slash: /@scope%2fname.
    const url = `${this.base}${name.startsWith("@") ? `@${encodeURIComponent(name.slice(1))}` : encodeURIComponent(name)}`;
    // The abbreviated form is a fraction of the size but has no publication times.
    const accept = this.options.minReleaseAgeMs > 0 ? "application/json" : "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8";
    const body = await this.get(url, accept, PACKUMENT_CAP_BYTES, specifier);
    if (body === null) throw new BuildError("app_build_failed", `the registry has no package ${name}`, { specifier });
    try {
      const parsed = JSON.parse(body.toString("utf8")) as Packument;
      if (typeof parsed.versions !== "object" || parsed.versions === null) throw new Error("no versions");
      return parsed;
    } catch {
      throw new BuildError("app_build_unavailable", `the registry's answer for ${name} is not a packument`, { specifier });
    }
  }

  /** The tarball's bytes, checked against the version's sha512 integrity before anything reads them. */
  async tarball(name: string, version: PackumentVersion, specifier: string): Promise<Buffer> {
    const expected = sha512Of(version.dist.integrity);
    if (expected === null) throw new BuildError("app_build_failed", `${name}@${version.version} has no sha512 integrity in the registry; it cannot be checked`, { specifier });
    const body = await this.get(version.dist.tarball, "application/octet-stream", TARBALL_CAP_BYTES, specifier);
    if (body === null) throw new BuildError("app_build_failed", `the registry has no tarball for ${name}@${version.version}`, { specifier });
    if (!createHash("sha512").update(body).digest().equals(expected)) {
      throw new BuildError("app_build_failed", `${name}@${version.version}'s tarball does not match its integrity; refused`, { specifier });
    }
    return body;
  }

  /** The body, or null on 404; capped at `cap` bytes while it streams in. */
  private async get(url: string, accept: string, cap: number, specifier: string): Promise<Buffer | null> {
    const headers: Record<string, string> = { accept };
    if (this.options.token !== undefined && new URL(url).origin === this.origin) headers["authorization"] = `Bearer ${this.options.token}`;
    let res;
    try {
      res = await request(url, { headers, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
    } catch (error) {
      throw new BuildError("app_build_unavailable", `the npm registry cannot be reached (${(error as Error).message})`, { specifier });
    }
    if (res.statusCode === 404) {
      await res.body.dump();
      return null;
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new BuildError("app_build_unavailable", `the npm registry answered ${res.statusCode} for ${url}`, { specifier });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > cap) {
        res.body.destroy();
        throw new BuildError("app_build_failed", `${url} is over the ${cap / 1024 / 1024} MiB cap`, { specifier });
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }
}

/** The sha512 digest an SRI string (`sha512-<base64> …`) names, or null when it names none. */
export function sha512Of(integrity: string | undefined): Buffer | null {
  for (const part of (integrity ?? "").split(/\s+/)) {
    if (part.startsWith("sha512-")) return Buffer.from(part.slice("sha512-".length).split("?")[0] ?? "", "base64");
  }
  return null;
}
