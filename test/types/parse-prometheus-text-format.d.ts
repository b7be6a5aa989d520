// The parser ships no types: what the metrics test reads of its result.
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
