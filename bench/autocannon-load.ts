import autocannon from 'autocannon';
import type { LoadResult, PurchaseLoadOptions } from './load-result.ts';

/**
 * The purchase load with autocannon, in this process: `connections` keep-alive connections for
 * `seconds`, each request a purchase by the next buyer. autocannon shares the cores with the servers
 * (about one core of its own), which caps every contender near the same figure; wrk is preferred.
 */
export async function autocannonLoad(options: PurchaseLoadOptions): Promise<LoadResult> {
  let next = 0;
  const buyers = options.buyers.slice(0, options.cycle ?? options.buyers.length);
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
  const ok = Object.entries(statuses).reduce((sum, [code, count]) => sum + (code.startsWith('2') ? count : 0), 0);
  return {
    requests: result.requests.total,
    rps: result.requests.total / options.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok,
    refused: result.requests.total - ok,
    errors: result.errors + result.timeouts,
    statuses,
  };
}
