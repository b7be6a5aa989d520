import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { spawn } from "node:child_process";

/** s3rver's fixed key pair; the SDK finds it in the environment, as it would a real one. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" };

export interface TestS3 {
  /** The S3 protocol's origin on loopback. */
  endpoint: string;
  bucket: string;
  /** The s3rver process, whose CPU a benchmark counts. */
  pid: number;
  /** A BLOB_STORE value for this bucket under `prefix`. */
  blobStore(prefix?: string): string;
  close(): Promise<void>;
}

// s3rver signs ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps in its legacy
// provider; hence a process of its own started with that provider (it also keeps s3rver's work
// off the test's event loop). It prints its port once listening.
const SERVER = `
const S3rver = require("s3rver");
const [directory, bucket] = process.argv.slice(1);
new S3rver({ port: 0, address: "127.0.0.1", silent: !process.env.S3_LOGS, directory, configureBuckets: [{ name: bucket }] })
  .run().then(({ port }) => console.log(port));
`;

/**
 * A real S3-protocol server (s3rver) on a loopback port with one empty bucket. Sets the SDK's
 * credentials in this process's environment, where a server started in-process looks for them.
 */
export async function startS3(bucket = "brickyard-test"): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), "brickyard-s3-"));
  // Tied to this process (parent-death signal), so a test process that dies takes it along.
  const args = [process.execPath, "--openssl-legacy-provider", "-e", SERVER, directory, bucket];
  const [command = process.execPath, ...rest] = existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", "--pdeathsig", "SIGKILL", "--", ...args] : args;
  const child = spawn(command, rest, { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<string>((resolve, reject) => {
    if (child.stdout === null) throw new Error("s3rver's output is not piped");
    createInterface({ input: child.stdout }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code} before listening`)));
  });
  Object.assign(process.env, S3_CREDENTIALS);
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    pid: child.pid ?? 0,
    blobStore: (prefix = "") => `s3://${bucket}/${prefix}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&forcePathStyle=1`,
    async close() {
      child.kill("SIGKILL");
      await exited;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
