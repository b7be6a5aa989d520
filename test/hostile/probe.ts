// The load and the stopwatch of the hostile suite, in a process of its own so that what it
// measures is the server's latency, not the test process's event loop (the server runs there).
// Calls each victim's op `rate` times a second and /healthz every `healthzMs`, and writes one
// JSON line per answer: {kind, name, at, ms, ok, status}. Stops when its stdin closes.
interface ProbeArgs {
  url: string;
  victims: { name: string; id: string; token: string; op: string; expect: string }[];
  rate: number;
  healthzMs: number;
}

const { url, victims, rate, healthzMs } = JSON.parse(process.argv[2] ?? "{}") as ProbeArgs;

function emit(sample: { kind: string; name?: string; at: number; ms: number; ok: boolean; status: number }): void {
  process.stdout.write(`${JSON.stringify(sample)}\n`);
}

async function timed(kind: string, name: string | undefined, path: string, init: RequestInit, check: (status: number, text: string) => boolean): Promise<void> {
  const at = Date.now();
  const start = performance.now();
  let ok = false;
  let status = 0;
  try {
    const res = await fetch(url + path, { ...init, signal: AbortSignal.timeout(10_000) });
    status = res.status;
    ok = check(res.status, await res.text());
  } catch {
    ok = false;
  }
  emit({ kind, ...(name === undefined ? {} : { name }), at, ms: performance.now() - start, ok, status });
}

// A fresh process's first fetch pays for loading and warming its HTTP client (tens of ms): not
// the server's latency, so it happens before the probe says it is ready.
await fetch(`${url}/healthz`).then((res) => res.text());

const timers = [
  ...victims.map((victim) =>
    setInterval(() => {
      void timed("victim", victim.name, `/app/${victim.id}/api/${victim.op}`, {
        method: "POST",
        headers: { authorization: `Bearer ${victim.token}`, "content-type": "application/json" },
        body: "{}",
      }, (status, text) => status === 200 && text.includes(victim.expect));
    }, 1000 / rate),
  ),
  setInterval(() => void timed("healthz", undefined, "/healthz", {}, (status) => status === 200), healthzMs),
];

process.stdin.resume();
process.stdin.on("end", () => {
  for (const timer of timers) clearInterval(timer);
  // Let the requests in flight answer, then go.
  setTimeout(() => process.exit(0), 500);
});
emit({ kind: "ready", at: Date.now(), ms: 0, ok: true, status: 0 });
