import type * as S3 from "@aws-sdk/client-s3";
import { checkBlobKey, type BlobStore } from "./blob-store.ts";

/** Values at least this large go up in parts (S3 takes parts of 5 MiB or more, except the last). */
export const MULTIPART_AT_BYTES = 8 * 1024 * 1024;
const PART_BYTES = 5 * 1024 * 1024;
/** DeleteObjects takes at most this many keys, as ListObjectsV2 returns at most this many. */
const PAGE = 1000;

/** The SDK module, loaded by `openBlobStore` only when an S3 store is configured. */
type Sdk = typeof S3;

/**
 * Blobs as objects in one S3 bucket, under an optional prefix (ARCHITECTURE part 4), for several
 * instances sharing one store. An object appears whole or not at all: a single PUT is atomic in
 * S3, and a multipart upload is invisible until it is completed (and aborted when a part fails).
 */
export class S3BlobStore implements BlobStore {
  constructor(
    private readonly sdk: Sdk,
    private readonly client: S3.S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {}

  async put(key: string, data: Buffer): Promise<void> {
    const Key = this.keyOf(key);
    if (data.length < MULTIPART_AT_BYTES) {
      await this.client.send(new this.sdk.PutObjectCommand({ Bucket: this.bucket, Key, Body: data, ContentLength: data.length }));
      return;
    }
    const { UploadId } = await this.client.send(new this.sdk.CreateMultipartUploadCommand({ Bucket: this.bucket, Key }));
    if (UploadId === undefined) throw new Error(`S3 started no multipart upload for ${Key}`);
    try {
      const parts: { ETag: string; PartNumber: number }[] = [];
      for (let offset = 0; offset < data.length; offset += PART_BYTES) {
        const PartNumber = parts.length + 1;
        const Body = data.subarray(offset, offset + PART_BYTES);
        const { ETag } = await this.client.send(new this.sdk.UploadPartCommand({ Bucket: this.bucket, Key, UploadId, PartNumber, Body, ContentLength: Body.length }));
        if (ETag === undefined) throw new Error(`S3 returned no ETag for part ${PartNumber} of ${Key}`);
        parts.push({ ETag, PartNumber });
      }
      await this.client.send(new this.sdk.CompleteMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
    } catch (error) {
      // Parts of an abandoned upload are stored (and billed) until aborted.
      await this.client.send(new this.sdk.AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId })).catch(() => undefined);
      throw error;
    }
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      const { Body } = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }));
      return Body === undefined ? Buffer.alloc(0) : Buffer.from(await Body.transformToByteArray());
    } catch (error) {
      if (error instanceof this.sdk.NoSuchKey) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers 204 whether or not the object existed.
    await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }));
  }

  async deletePrefix(prefix: string): Promise<void> {
    const Prefix = `${this.keyOf(prefix)}/`;
    // Deleting while listing is safe: each page starts after the keys already returned.
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(new this.sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix, MaxKeys: PAGE, ContinuationToken }));
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key === undefined ? [] : [{ Key: o.Key }]));
      if (keys.length > 0) {
        const result = await this.client.send(new this.sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
        const failed = result.Errors ?? [];
        if (failed.length > 0) throw new Error(`S3 kept ${failed.length} object(s) under ${Prefix}: ${failed[0]?.Code ?? "unknown"} ${failed[0]?.Message ?? ""}`);
      }
      ContinuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (ContinuationToken !== undefined);
  }

  close(): void {
    this.client.destroy();
  }

  /** The object key: the checked blob key under the configured prefix. */
  private keyOf(key: string): string {
    checkBlobKey(key);
    return this.prefix === "" ? key : `${this.prefix}/${key}`;
  }
}
