import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase } from "./dialects.ts";
import { freePort } from "./process.ts";
import { startRoundRobinProxy, type RoundRobinProxy } from "./round-robin-proxy.ts";
import { S3_CREDENTIALS, startS3, type TestS3 } from "./s3.ts";
import { brickyardCli, instanceProcess, serverEnv, setUpDeployment, type InstanceProcess } from "./server-process.ts";

/** Several `brickyard serve` processes as an operator deploys them: one database, one bucket, one origin. */
export interface Cluster {
  readonly proxy: RoundRobinProxy;
  /** Each on a fixed port, so a restart comes back where the proxy looks for it. */
  readonly instances: InstanceProcess[];
  /** A user token (user `process`, enterprise plan). */
  readonly token: string;
  readonly databaseUrl: string;
  close(): Promise<void>;
}

/**
 * Starts `size` instances on one throwaway PostgreSQL database and one s3rver bucket, behind a
 * round-robin proxy whose origin is their BASE_URL, and waits until the proxy finds all ready.
 * Every instance has its own DATA_DIR (workerd's sockets and configs are per process) and the
 * shared SECRETS_KEY; one workerd each keeps three instances light on a 2-core machine.
 */
export async function startCluster(size: number, extraEnv: Record<string, string> = {}): Promise<Cluster> {
  const s3: TestS3 = await startS3();
  const database = await createTestDatabase();
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const proxy = await startRoundRobinProxy(ports.map((port) => `http://127.0.0.1:${port}`));
  const dirs = ports.map(() => mkdtempSync(join(tmpdir(), "brickyard-cluster-")));
  const shared = serverEnv({
    DATABASE_URL: database.url,
    BLOB_STORE: s3.blobStore("cluster"),
    SECRETS_KEY: randomBytes(32).toString("base64"),
    BASE_URL: proxy.url,
    TRUST_PROXY: "127.0.0.1",
    EXECUTORS: "1",
    FREE_EXECUTORS: "0",
    // A few of the proxy's health checks: it stops sending before the instance stops accepting.
    SHUTDOWN_GRACE_MS: "1000",
    ...S3_CREDENTIALS,
    ...extraEnv,
  });
  const instances = ports.map((port, i) => instanceProcess({ ...shared, DATA_DIR: dirs[i] }, port));
  const close = async () => {
    await Promise.all(instances.map((instance) => instance.killGroup()));
    await proxy.close();
    await s3.close();
    await database.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const setup = { ...shared, DATA_DIR: dirs[0] };
    const token = await setUpDeployment(setup);
    // Plan ceilings (runs per minute) are per instance; the load stays far below them anyway.
    await brickyardCli(setup)("user", "plan", "process", "enterprise");
    await Promise.all(instances.map((instance) => instance.start()));
    await Promise.all(instances.map((instance) => proxy.until(instance.base, true)));
    return { proxy, instances, token, databaseUrl: database.url, close };
  } catch (error) {
    await close();
    throw error;
  }
}
