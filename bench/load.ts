import autocannon from 'autocannon';

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  errors: number;
}

/**
 * A closed-loop load of `connections` keep-alive connections for `seconds`, each request a purchase by
 * the next buyer of `buyers` (token and id), so the accept path never meets the same buyer twice. Both
 * servers under comparison get exactly this load; autocannon runs in this process.
 */
export async function purchaseLoad(options: {
  url: string;
  saleId: number;
  buyers: { id: string; token: string }[];
  connections: number;
  seconds: number;
}): Promise<LoadResult> {
  let next = 0;
  const { buyers } = options;
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.seconds,
    requests: [
      {
        method: 'POST',
        path: `/api/sales/${options.saleId}/purchase`,
        setupRequest: (request) => {
          const buyer = buyers[next++ % buyers.length]!;
          request.headers = { authorization: `Bearer ${buyer.token}`, 'x-buyer': buyer.id };
          return request;
        },
      },
    ],
  });
  const statuses: Record<string, number> = {};
  for (const [code, count] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = (count as { count: number }).count;
  return {
    requests: result.requests.total,
    rps: result.requests.total / options.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    statuses,
    errors: result.errors + result.timeouts,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
