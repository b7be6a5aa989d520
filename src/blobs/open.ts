import type { BlobStoreConfig } from "../config/config.ts";
import type { BlobStore } from "./blob-store.ts";
import { FsBlobStore } from "./fs-store.ts";
import { S3BlobStore } from "./s3-store.ts";

/**
 * The configured blob store, checked usable before the service starts: an S3 bucket that cannot
 * be reached (wrong endpoint, credentials or name) fails the start, not the first upload.
 */
export async function openBlobStore(config: BlobStoreConfig): Promise<BlobStore> {
  if (config.kind === "files") return new FsBlobStore(config.root);
  // Loaded only when configured: most installations keep blobs on disk and never pay for the SDK.
  const sdk = await import("@aws-sdk/client-s3");
  const region = config.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? (config.endpoint === null ? undefined : "us-east-1");
  const client = new sdk.S3Client({
    ...(config.endpoint === null ? {} : { endpoint: config.endpoint }),
    ...(region === undefined ? {} : { region }),
    forcePathStyle: config.forcePathStyle,
    // The SDK's default checksums (trailing CRC32 in aws-chunked bodies) are refused by many
    // S3-compatible servers; send them only where an operation requires one.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // A bucket that stops answering fails requests instead of holding them (and, with SQLite, the
    // object sweep's transaction) for ever: the SDK sets no timeout of its own.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });
  try {
    await client.send(new sdk.HeadBucketCommand({ Bucket: config.bucket }));
  } catch (error) {
    client.destroy();
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const why = status === 404 ? "it does not exist" : status === 403 ? "access is denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)" : String((error as Error).message || (error as Error).name);
    throw new Error(`BLOB_STORE: the bucket ${config.bucket}${config.endpoint === null ? "" : ` at ${config.endpoint}`} is not usable: ${why}`, { cause: error });
  }
  return new S3BlobStore(sdk, client, config.bucket, config.prefix);
}
