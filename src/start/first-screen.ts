import { join, relative } from "node:path";
import type { Config } from "../config/config.ts";

/**
 * What `npm start` says on a terminal once it serves, in words rather than a JSON log line: where
 * to open it, what it stores where, how a person gets an account, where agents begin.
 */
export function firstScreen(config: Config, cwd = process.cwd()): string {
  const base = config.baseUrl;
  const shown = (path: string) => {
    const rel = relative(cwd, path);
    return rel === "" ? "." : rel.startsWith("..") ? path : `./${rel}`;
  };
  const store = config.databaseUrl === null ? `SQLite at ${shown(join(config.dataDir, "brickyard.db"))}` : `PostgreSQL (DATABASE_URL)`;
  const files = config.blobStore.kind === "s3" ? `S3 bucket ${config.blobStore.bucket}` : `files under ${shown(config.blobStore.root)}`;
  const signUp = config.signup === "open" ? `sign up at ${base}/sign-up, or run` : "sign-up is closed (SIGNUP=closed): run";
  return [
    "",
    `  Brickyard is serving ${base}`,
    "",
    `  Open it        ${base}`,
    `  Data           ${store}; ${files}`,
    `  First account  ${signUp}:`,
    `                 npx brickyard user create --email you@example.com --handle you --password 'a long password'`,
    `  Agents start   ${base}/llms.txt (the guide) and ${base}/mcp (MCP)`,
    "",
    "  Logs follow. Ctrl-C stops it.",
    "",
  ].join("\n");
}
