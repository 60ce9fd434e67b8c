import { Agent, request } from 'node:http';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  latencyMs: number;
}

/**
 * A keep-alive HTTP client with a bounded number of sockets, like a load balancer in front of the
 * gateway: any number of requests may be fired at once, at most `connections` are on the wire.
 */
export function createHttpClient(baseUrl: string, connections = 64) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const base = new URL(baseUrl);
  return {
    send(method: string, path: string, { headers = {}, body }: { headers?: Record<string, string>; body?: unknown } = {}): Promise<HttpResult> {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const started = performance.now();
      return new Promise((resolve, reject) => {
        const req = request(
          {
            agent,
            host: base.hostname,
            port: base.port,
            method,
            path,
            headers: { ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}), ...headers },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
            res.on('end', () => {
              let parsed: Record<string, unknown> = {};
              try {
                parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
              } catch {
                parsed = { raw: text };
              }
              resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, latencyMs: performance.now() - started });
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    close() {
      agent.destroy();
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
