import { readFileSync } from "node:fs";

/**
 * The process's soft limit on open file descriptors (every socket is one): what the caps on
 * held-open sockets are shares of, so the store, workerd's sockets and the files served remain.
 * 20,000 when /proc cannot say.
 */
export function openFilesLimit(): number {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((row) => row.startsWith("Max open files"));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(soft) && soft > 0 ? soft : 20_000;
  } catch {
    return 20_000;
  }
}
