// Asset downloads with the S3 blob store: through Brickyard's signed URL (bytes streamed from S3
// by the server) against the same object straight from the S3 server, in the same run, load from
// a forked client. This is the measurement behind "our HMAC URLs, not S3 presigned ones" (README).
// The second CPU column ("workerd") is s3rver's here. Repeated downloads of an asset hit the
// server's read cache (write-once blob keys); a cold read costs ~1.6 ms of server CPU, mostly the SDK.
// `npm run bench:assets`; Env: BENCH_SECONDS (per row, default 4), BENCH_CONCURRENCY (default 8).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startS3 } from "../test/helpers/s3.ts";
import { formatRow, LoadClient, measure } from "./lib/measure.ts";
import { brickyard } from "./lib/servers.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const SIZES = [16 * 1024, 1024 * 1024];

const s3 = await startS3("bench-assets");
process.env.BLOB_STORE = s3.blobStore("bench");
const dataDir = mkdtempSync(join(tmpdir(), "brickyard-bench-assets-"));
const server = await brickyard(dataDir, null);
const client = LoadClient.start();
// The spec's per-address limits would turn this into a 429 test; the checks still run.
const unlimited = setInterval(() => server.built.ctx.limiter.reset(), 10);
try {
  const created = (await (await fetch(`${server.url}/app`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ module: `export const manifest = { id: "bench-assets", routes: { op: {} } };\nexport default { async fetch() { return Response.json({ ok: true, value: 1 }); } };` }),
  })).json()) as { id: string; token: string };
  const s3Pid = () => [s3.pid];
  for (const size of SIZES) {
    const form = new FormData();
    form.set("key", `asset-${size}`);
    form.set("file", new Blob([new Uint8Array(size).fill(5)], { type: "application/octet-stream" }), "a.bin");
    const up = (await (await fetch(`${server.url}/app/${created.id}/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${created.token}` } })).json()) as { url: string };
    const row = await server.built.ctx.db.selectFrom("assets").select("blob_key").where("app_id", "=", created.id).where("key", "=", `asset-${size}`).executeTakeFirstOrThrow();
    // s3rver serves objects to unsigned GETs: the cheapest a presigned URL could be.
    const direct = `${s3.endpoint}/${s3.bucket}/bench/${row.blob_key}`;
    const results = await measure(
      client,
      {
        through: { targets: [{ url: up.url }], pids: s3Pid },
        direct: { targets: [{ url: direct }], pids: s3Pid },
      },
      { concurrency: CONCURRENCY, msPerRow: SECONDS * 1000 },
    );
    const kib = size / 1024;
    console.log(formatRow(`asset ${kib} KiB via signed URL (server)`, results.through));
    console.log(formatRow(`asset ${kib} KiB straight from S3`, results.direct));
    console.log(`asset ${kib} KiB: via/direct=${(results.through.rps / results.direct.rps).toFixed(2)} server CPU per MiB served=${((results.through.serverUs * 1024) / kib / 1000).toFixed(2)} ms`);
  }
} finally {
  clearInterval(unlimited);
  client.close();
  await server.stop();
  await s3.close();
  rmSync(dataDir, { recursive: true, force: true });
}
