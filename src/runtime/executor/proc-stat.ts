import { readFileSync } from "node:fs";

/**
 * The fields of /proc/PID/stat (Linux) after the command name, its state first (field 3 is index
 * 0); throws where it cannot be read (ENOENT: no such process).
 */
export function procStat(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name may hold spaces or parentheses: the fields start after the last ")".
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}
