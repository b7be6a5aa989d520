import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { expect } from "vitest";

export interface Family {
  name: string;
  type: string;
  metrics: { labels?: Record<string, string>; value?: string; count?: string; buckets?: Record<string, string> }[];
}

/** The server's scrape, parsed by a Prometheus text-format parser: family name → its samples. */
export async function scrape(url: string, token: string): Promise<Map<string, Family>> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return new Map((parsePrometheusTextFormat(await res.text()) as Family[]).map((family) => [family.name, family]));
}

/** A counter's or gauge's value for the sample whose labels include `labels` (0 when absent). */
export function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  if (family === undefined) throw new Error(`no ${name} in the scrape`);
  const sample = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return Number(sample?.value ?? sample?.count ?? 0);
}
