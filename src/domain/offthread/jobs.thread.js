// The off-thread worker's entry (a worker thread, never Node's main thread). Sources are
// TypeScript, so it registers tsx as the CLI does, then answers one job at a time (jobs.ts).
import { parentPort } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
const { runJob } = await import("./jobs.ts");
parentPort.on("message", ({ id, job }) => parentPort.postMessage({ id, reply: runJob(job) }));
parentPort.postMessage({ ready: true });
