import { Type } from "typebox";
import { NullableTimestamp, Timestamp } from "../../http/schemas.ts";

export const TokenRecord = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.String({ description: "first characters of the token, for matching by eye" }),
  createdAt: Timestamp,
  expiresAt: NullableTimestamp,
  lastUsedAt: NullableTimestamp,
  source: Type.String({ enum: ["minted", "paired"] }),
});
