import { parentPort } from "node:worker_threads";
import { runJob, type Job } from "./jobs.ts";

// The off-thread worker (a worker thread, never Node's main thread): answers one job at a time.
// Compiled, it is the thread's entry; from sources, jobs.thread.js registers tsx and loads it.
const port = parentPort;
if (port === null) throw new Error("thread.ts runs as a worker thread");
port.on("message", ({ id, job }: { id: number; job: Job }) => port.postMessage({ id, reply: runJob(job) }));
port.postMessage({ ready: true });
