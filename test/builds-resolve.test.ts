import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseModule } from "../src/domain/source/manifest.ts";
import { BuildError } from "../src/domain/builds/build-error.ts";
import { scanImports } from "../src/domain/builds/imports.ts";
import { Registry } from "../src/domain/builds/registry.ts";
import { resolveImports } from "../src/domain/builds/resolve.ts";
import { unpackTarball } from "../src/domain/builds/unpack.ts";
import { startNpmRegistry, type NpmRegistry } from "./helpers/npm-registry.ts";

const DAY = 24 * 60 * 60 * 1000;
const importsOf = (source: string) => scanImports(parseModule(source), source).npm;

describe("builds: resolution and unpacking", () => {
  let npm: NpmRegistry;
  beforeAll(async () => {
    npm = await startNpmRegistry();
  });
  afterAll(async () => npm.close());

  it("names each import's line and column as acorn counts them, whatever ends the lines", () => {
    const source = `// one\r\n/* two\r three */ import "npm:a@1";\n\u2028  import "npm:b@2"; import("npm:c@3");`;
    expect(importsOf(source).map(({ name, line, column }) => ({ name, line, column }))).toEqual([
      { name: "a", line: 3, column: 17 },
      { name: "b", line: 5, column: 9 },
      { name: "c", line: 5, column: 27 },
    ]);
    let refusal: unknown;
    try {
      importsOf(`\n\n   import(name);`);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ kind: "app_build_unsupported", fields: { details: { line: 3, column: 10 } } });
  });

  it("an unchanged range keeps the prior lock's version; a changed range resolves afresh", async () => {
    const registry = new Registry({ url: npm.url, minReleaseAgeMs: 0 });
    const imports = importsOf(`import { greet } from "npm:greet@^1.0.0";`);
    const fresh = await resolveImports(registry, imports, {}, Date.now());
    expect(fresh.direct).toEqual({ greet: { range: "^1.0.0", version: "1.2.0" } });
    const kept = await resolveImports(registry, imports, { greet: { range: "^1.0.0", version: "1.0.0" } }, Date.now());
    expect(kept.direct.greet?.version).toBe("1.0.0");
    const changed = await resolveImports(registry, importsOf(`import { greet } from "npm:greet@>=1.0.0";`), { greet: { range: "^1.0.0", version: "1.0.0" } }, Date.now());
    expect(changed.direct.greet?.version).toBe("2.0.0");
  });

  it("NPM_MIN_RELEASE_AGE passes over versions younger than it, for ranges and for dist-tags", async () => {
    const now = Date.now();
    npm.publishedAt("greet", "1.2.0", new Date(now - 60_000).toISOString());
    npm.publishedAt("greet", "2.0.0", new Date(now - 60_000).toISOString());
    const careful = new Registry({ url: npm.url, minReleaseAgeMs: DAY });
    expect((await resolveImports(careful, importsOf(`import "npm:greet@^1";`), {}, now)).direct.greet?.version).toBe("1.0.0");
    expect((await resolveImports(careful, importsOf(`import "npm:greet";`), {}, now)).direct.greet?.version).toBe("1.0.0");
    const eager = new Registry({ url: npm.url, minReleaseAgeMs: 0 });
    expect((await resolveImports(eager, importsOf(`import "npm:greet";`), {}, now)).direct.greet?.version).toBe("2.0.0");
    npm.publishedAt("greet", "1.2.0", "2020-01-01T00:00:00.000Z");
    npm.publishedAt("greet", "2.0.0", "2020-01-01T00:00:00.000Z");
  });

  it("a dependency that conflicts with a root package is placed under its dependent", async () => {
    const registry = new Registry({ url: npm.url, minReleaseAgeMs: 0 });
    const tree = await resolveImports(registry, importsOf(`import "npm:greet@1.0.0"; import "npm:shout@1";`), {}, Date.now());
    expect(tree.packages.map((p) => `${p.dir}@${p.version.version}`).sort()).toEqual([
      "node_modules/greet@1.0.0",
      "node_modules/shout/node_modules/greet@2.0.0",
      "node_modules/shout@1.0.0",
    ]);
  });

  it("an import of one package with two ranges is refused", async () => {
    const registry = new Registry({ url: npm.url, minReleaseAgeMs: 0 });
    const failure = await resolveImports(registry, importsOf(`import "npm:greet@1";\nimport "npm:greet@2";`), {}, Date.now()).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(BuildError);
    expect((failure as BuildError).details).toMatchObject({ specifier: "npm:greet@2", line: 2 });
  });

  it("unpacking keeps regular files and folders only: a symlink in the archive is not written", async () => {
    const registry = new Registry({ url: npm.url, minReleaseAgeMs: 0 });
    const doc = await registry.packument("linky", "npm:linky@1");
    const version = doc.versions["1.0.0"];
    if (version === undefined) throw new Error("fixture registry lacks linky@1.0.0");
    const tarball = await registry.tarball("linky", version, "npm:linky@1");
    // The archive does hold the symlink...
    const dir = mkdtempSync(join(tmpdir(), "brickyard-unpack-"));
    const entries: string[] = [];
    writeFileSync(join(dir, "linky.tgz"), tarball);
    await tar.t({ file: join(dir, "linky.tgz"), onReadEntry: (entry) => entries.push(`${entry.type}:${entry.path}`) });
    rmSync(join(dir, "linky.tgz"));
    expect(entries).toContain("SymbolicLink:package/data.js");
    // ...and the unpacked package does not.
    try {
      await unpackTarball(tarball, dir, { used: 0 }, "linky@1.0.0");
      expect(readdirSync(dir).sort()).toEqual(["index.js", "package.json"]);
      for (const name of readdirSync(dir)) expect(lstatSync(join(dir, name)).isFile()).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
