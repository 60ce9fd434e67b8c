import { Pool, type Dispatcher } from 'undici';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  latencyMs: number;
}

export interface HttpClient {
  /** Sends a request (`body` as JSON) and reads the whole answer; rejects when no answer came (connection refused or cut). */
  send(method: Dispatcher.HttpMethod, path: string, init?: { headers?: Record<string, string>; body?: unknown }): Promise<HttpResult>;
  /** Closes the connections at once, cutting requests still in flight. */
  close(): void;
}

/**
 * The HTTP client of the tests, the harness and the load runner: keep-alive connections to one origin
 * (undici's pool), at most `connections` of them, like a load balancer in front of the gateway: any
 * number of requests may be sent at once, the rest wait for a free connection.
 */
export function createHttpClient(baseUrl: string, connections = 64): HttpClient {
  const pool = new Pool(baseUrl, { connections });
  return {
    async send(method, path, { headers = {}, body } = {}) {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const started = performance.now();
      const res = await pool.request({
        method,
        path,
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
        body: payload,
      });
      const text = await res.body.text();
      let parsed: Record<string, unknown> = {};
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        parsed = { raw: text };
      }
      return { status: res.statusCode, headers: res.headers, body: parsed, latencyMs: performance.now() - started };
    },
    close() {
      void pool.destroy();
    },
  };
}

/** The p-th percentile (0-100) of a list of numbers, nearest-rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Runs `task` over `items` with at most `concurrency` at a time, like that many clients each sending
 * one request after another; a request's latency is then the server's answer time, not time queued in
 * the load generator.
 */
export async function mapConcurrently<T, R>(items: T[], concurrency: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  return results;
}
