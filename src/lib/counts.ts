/** Adds `by` to `key`'s count, forgetting the key at 0 so a map of counts holds only the live ones. */
export function addCount(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}
