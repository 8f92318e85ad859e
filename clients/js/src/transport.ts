/*
 * transport.ts — one daemon connection: URLs, auth, JSON in and out, SSE, errors.
 *
 * Every non-2xx answer becomes a typed SandboxdError (errors.ts); a failed connection becomes a
 * NetworkError. An aborted request rejects with the signal's reason (an AbortError), untouched.
 * Uses only the platform's fetch, so the SDK has no runtime dependencies.
 */
import { errorFromResponse, NetworkError, ValidationError } from "./errors.js";
import { readSSE, type SSEMessage } from "./sse.js";
import type { ConnectionOptions } from "./types.js";

export interface RequestOptions {
  /** A value sent as a JSON body. */
  json?: unknown;
  /** A raw body (files). */
  body?: Uint8Array | string;
  signal?: AbortSignal;
  /** Ask for Server-Sent Events. */
  sse?: boolean;
}

export class Transport {
  readonly baseUrl: string;
  private readonly headers: Record<string, string>;

  constructor(conn: ConnectionOptions) {
    this.baseUrl = conn.url.replace(/\/+$/, "");
    this.headers = { ...(conn.headers ?? {}) };
    if (conn.token) this.headers.authorization = `Bearer ${conn.token}`;
  }

  /** Sends a request; resolves with the response only when its status is 2xx. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers };
    let body: BodyInit | undefined;
    if (opts.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(opts.json);
    } else if (opts.body !== undefined) {
      headers["content-type"] = "application/octet-stream";
      body = opts.body as BodyInit;
    }
    headers.accept = opts.sse ? "text/event-stream" : "application/json";
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, { method, headers, body, signal: opts.signal });
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason ?? e;
      throw new NetworkError(`cannot reach sandboxd at ${this.baseUrl}: ${(e as Error).message}`,
        "NETWORK_ERROR", 0, { cause: e });
    }
    if (!res.ok) throw errorFromResponse(res.status, await res.text().catch(() => ""));
    return res;
  }

  /** Sends a request and parses its JSON answer. */
  async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, opts);
    return (await res.json()) as T;
  }

  /** Sends a request for SSE and yields its messages; the response headers come first. */
  async sse(method: string, path: string, opts: RequestOptions = {}):
      Promise<{ headers: Headers; messages: AsyncGenerator<SSEMessage> }> {
    const res = await this.request(method, path, { ...opts, sse: true });
    if (!res.body) throw new NetworkError("the daemon sent an empty stream", "NETWORK_ERROR", res.status);
    return { headers: res.headers, messages: readSSE(res.body) };
  }
}

/**
 * One escaped URL path segment. "." and ".." are refused: fetch resolves them (even as %2E),
 * so the request would reach another route instead of naming that id.
 */
export function segment(id: string): string {
  if (id === "" || id === "." || id === "..")
    throw new ValidationError(`'${id}' is not a valid id`, "VALIDATION_FAILED", 400);
  return encodeURIComponent(id);
}

/** `/v1/sandboxes/{id}` with the id escaped. */
export function sandboxPath(id: string): string {
  return `/v1/sandboxes/${segment(id)}`;
}

/** Drops `undefined` values (Cloudflare's envVars skip them). */
export function definedOnly(env?: Record<string, string | undefined>): Record<string, string> | undefined {
  if (!env) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
