import { join } from "node:path";
import type { Config } from "../config/config.ts";
import type { BlobStore } from "./blob-store.ts";
import { FsBlobStore } from "./fs-store.ts";

/** BLOB_STORE unset: files under DATA_DIR/blobs; a path: files there. S3 URLs arrive with the S3 store. */
export function openBlobStore(config: Pick<Config, "blobStore" | "dataDir">): BlobStore {
  if (config.blobStore === null) return new FsBlobStore(join(config.dataDir, "blobs"));
  if (/^s3:\/\//i.test(config.blobStore)) throw new Error("BLOB_STORE=s3://… is not supported yet; unset it to keep blobs under DATA_DIR/blobs");
  return new FsBlobStore(config.blobStore);
}
