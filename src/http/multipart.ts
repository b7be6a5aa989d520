import type { MultipartFile } from "@fastify/multipart";
import type { FastifyRequest } from "fastify";
import { apiError } from "../errors/index.ts";

export interface MultipartUpload {
  fields: Record<string, string>;
  /** The first part named `file`; later file parts are read and dropped. */
  file: { data: Buffer; mimetype: string } | null;
}

/**
 * Reads a multipart body of text fields and one file (the scope registered @fastify/multipart
 * with its limits). A file past the size limit calls `tooLarge`; a malformed body is 400.
 */
export async function readUpload(request: FastifyRequest, tooLarge: (declared: number) => never): Promise<MultipartUpload> {
  if (!request.isMultipart()) throw apiError("invalid_request", "send multipart/form-data");
  const out: MultipartUpload = { fields: {}, file: null };
  try {
    for await (const part of request.parts()) {
      if (part.type === "field") out.fields[part.fieldname] = String(part.value);
      else if (part.fieldname === "file" && out.file === null) out.file = { data: await part.toBuffer(), mimetype: part.mimetype };
      else await drain(part);
    }
  } catch (error) {
    if ((error as { code?: string }).code === "FST_REQ_FILE_TOO_LARGE") tooLarge(Number(request.headers["content-length"] ?? Number.MAX_SAFE_INTEGER));
    // Everything read here is the sender's body: busboy's refusals (no boundary, a part cut
    // off, a field past the limit then a file: the stream's premature close) carry no status,
    // and are the body's fault all the same.
    throw apiError("invalid_request", `the multipart body is malformed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return out;
}

async function drain(part: MultipartFile): Promise<void> {
  for await (const _chunk of part.file) {
    // Discarded: only the first `file` part is kept.
  }
}
