import { randomFillSync } from "node:crypto";
import type { WriteLease } from "../domain/storage/index.ts";
import type { ApiError } from "../errors/index.ts";
import type { Capability } from "./types.ts";

/** One op call in flight: what the internal API trusts instead of anything app code says. */
export interface Invocation {
  id: string;
  appId: string;
  revision: number;
  op: string;
  access: "read" | "write";
  caps: ReadonlySet<Capability>;
  /** The first refusal a binding met (a write from a read op, a cap); surfaced if the op fails. */
  refusal: ApiError | null;
  /** Room in the app's cap held for this call's writes (write-behind), if any. */
  lease: WriteLease | null;
}

/**
 * Invocation ids minted by the control plane. They are 144-bit random, live only while their
 * call runs, and are the only thing the internal API accepts to name an app.
 */
export class Invocations {
  private readonly live = new Map<string, Invocation>();

  mint(fields: Omit<Invocation, "id" | "refusal" | "lease">): Invocation {
    const invocation: Invocation = { ...fields, id: nextId(), refusal: null, lease: null };
    this.live.set(invocation.id, invocation);
    return invocation;
  }

  get(id: string | undefined): Invocation | undefined {
    return id === undefined ? undefined : this.live.get(id);
  }

  end(id: string): void {
    this.live.delete(id);
  }
}

// Ids come from a pool filled by one crypto call per 256 ids (as crypto.randomUUID does), not one
// call per op call: every op call mints one.
const ID_BYTES = 18;
const pool = Buffer.alloc(ID_BYTES * 256);
let offset = pool.length;

function nextId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = pool.toString("base64url", offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return id;
}
