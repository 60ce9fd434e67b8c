import { signBuyerTokens, percentile } from '@flashsale/harness';
import type { SaleStore } from '@flashsale/redis-store';
import type { PrismaClient } from '@flashsale/order-store';
import type { Outcome, Shape } from '../k6/lib/shapes.js';
import { playArrivals, type LoadProgress } from './arrival-load.ts';
import { checkSaleInvariants, invariantsHold, type SaleInvariants } from './invariants.ts';

export interface ScenarioTarget {
  baseUrl: string;
  adminToken: string;
  authSecret: string;
  /** The system's Redis (bound to its prefix) and MySQL, for the invariant check. */
  store: SaleStore;
  prisma: PrismaClient;
}

export interface ScenarioReport {
  scenario: string;
  shape: Shape;
  saleIds: number[];
  seconds: number;
  requests: number;
  throughput: number;
  dropped: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  outcomes: Record<Outcome, number>;
  statuses: Record<string, number>;
  invariants: SaleInvariants[];
  /** No 5xx or transport error, p99 under the shape's bound, and every invariant holds. */
  passed: boolean;
}

/**
 * One scenario through the Node runner: the sales made through the admin API (as k6's setup() does),
 * buyer tokens signed here, the arrivals played, the streams drained, the invariants checked.
 */
export async function runScenario(
  scenario: string,
  shape: Shape,
  target: ScenarioTarget,
  onProgress?: (progress: LoadProgress) => void,
): Promise<ScenarioReport> {
  const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const saleIds: number[] = [];
  for (let i = 0; i < shape.sales; i += 1) {
    const res = await fetch(`${target.baseUrl}/api/admin/sales`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `loadtest ${scenario} ${run} #${i + 1}`,
        stock: shape.stock,
        perUserLimit: shape.perUserLimit,
        startsAt: new Date(Date.now() - 1000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    if (res.status !== 201) throw new Error(`creating a sale failed: ${res.status} ${await res.text()}`);
    saleIds.push(((await res.json()) as { id: number }).id);
  }
  const userIds = Array.from({ length: shape.buyers }, (_, i) => `lt-${run}-${i}`);
  const tokens = signBuyerTokens(userIds, { secret: target.authSecret });
  const buyerOf = (i: number) => (shape.pickBuyer === 'random' ? Math.floor(Math.random() * shape.buyers) : i % shape.buyers);

  const load = await playArrivals(
    target.baseUrl,
    shape,
    (i) => {
      const buyer = buyerOf(i);
      return { saleId: saleIds[i % saleIds.length]!, userId: userIds[buyer]!, token: tokens[buyer]! };
    },
    onProgress,
  );

  const invariants: SaleInvariants[] = [];
  for (const saleId of saleIds) {
    const accepted = new Map([...load.accepted].filter(([reservationId]) => reservationId.startsWith(`${saleId}-`)));
    invariants.push(await checkSaleInvariants(target.store, target.prisma, saleId, accepted));
  }
  const latencyMs = {
    p50: percentile(load.latencies, 50),
    p90: percentile(load.latencies, 90),
    p99: percentile(load.latencies, 99),
    max: percentile(load.latencies, 100),
  };
  return {
    scenario,
    shape,
    saleIds,
    seconds: load.elapsedSeconds,
    requests: load.sent,
    throughput: load.sent / load.elapsedSeconds,
    dropped: load.dropped,
    latencyMs,
    outcomes: load.outcomes,
    statuses: load.statuses,
    invariants,
    passed: load.outcomes.error === 0 && latencyMs.p99 < shape.p99Ms && invariantsHold(invariants),
  };
}
