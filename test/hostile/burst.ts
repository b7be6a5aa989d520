// Fires `n` identical POSTs at once from a process of its own (the attacker's load must not run
// on the server's event loop, which is this suite's process) and prints each answer's status and
// error kind as one JSON array.
interface BurstArgs {
  url: string;
  token: string;
  body: unknown;
  n: number;
}

const { url, token, body, n } = JSON.parse(process.argv[2] ?? "{}") as BurstArgs;

const answers = await Promise.all(
  Array.from({ length: n }, async () => {
    const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const parsed = (await res.json()) as { error?: { kind?: string } };
    return { status: res.status, kind: parsed.error?.kind ?? null };
  }),
);
process.stdout.write(JSON.stringify(answers));
