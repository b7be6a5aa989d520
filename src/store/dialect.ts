export type Dialect = "sqlite" | "postgres";

/** Column type for raw bytes: the one schema difference the two dialects force on us. */
export function bytesType(dialect: Dialect): "blob" | "bytea" {
  return dialect === "sqlite" ? "blob" : "bytea";
}

/** True when `error` is a unique-constraint violation in either dialect. */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "23505";
}
