export interface ApiResponse<T = ApiBody> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

// Loose on purpose: tests assert on whatever the server sent back.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ApiBody = any;

export interface RequestOptions {
  token?: string;
  /** Raw Cookie header value. */
  cookie?: string;
  headers?: Record<string, string>;
  /** Send this exact text as the body instead of JSON-encoding `body`. */
  raw?: string;
}

/** A small fetch wrapper for tests: JSON in, parsed JSON (or text) out, status and headers kept. */
export class Client {
  constructor(
    readonly url: string,
    readonly origin: string,
  ) {}

  get(path: string, options?: RequestOptions) {
    return this.request("GET", path, undefined, options);
  }
  post(path: string, body?: unknown, options?: RequestOptions) {
    return this.request("POST", path, body, options);
  }
  put(path: string, body?: unknown, options?: RequestOptions) {
    return this.request("PUT", path, body, options);
  }
  patch(path: string, body?: unknown, options?: RequestOptions) {
    return this.request("PATCH", path, body, options);
  }
  delete(path: string, options?: RequestOptions) {
    return this.request("DELETE", path, undefined, options);
  }

  async request(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.cookie !== undefined) headers.cookie = options.cookie;
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
    const response = await fetch(this.url + path, { method, headers, body: payload, redirect: "manual" });
    const text = await response.text();
    let parsed: ApiBody = text;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      // Not JSON (HTML pages, SVG, CSV): keep the text.
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }
}
