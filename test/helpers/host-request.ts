import { request as httpRequest } from "node:http";

/** A request to the server with the `Host` a browser on that domain would send (fetch cannot set it). */
export function viaHost(url: string, host: string, path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method: init.method ?? "GET", headers: { host, accept: "text/html", ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}
