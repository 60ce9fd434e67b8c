import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient, ledgerOf, purchaseBurst, type BurstOutcome } from '@flashsale/harness';
import { until } from '../support/until.ts';
import { salesOnEveryMaster, type SaleStats } from '../support/cluster-sales.ts';
import { startClusterSystem, type ClusterSystem } from '../support/system.ts';

// The whole system on a real 3-master Redis Cluster, the processes told only REDIS_CLUSTER_NODES (their
// REDIS_URL points at a closed port): two gateways, two workers, two reconcilers, sales on every master.

let system: ClusterSystem;
beforeAll(async () => {
  // An unchanged sale audited again every half second (not once a minute): the test waits for an audit
  // after the burst, which an audit that found a sale already drained just before would otherwise defer.
  system = await startClusterSystem({ gateways: 2, workers: 2, reconcilers: 2, env: { RECONCILER_AUDIT_IDLE_MS: '500' } });
});
afterAll(async () => {
  await system?.stop();
});

describe('a flash crowd on a Redis Cluster', () => {
  it('sells every sale exactly its stock, on every master at once, and every 202 becomes one order', async () => {
    const { ctx, gateways } = system;
    const sales = await salesOnEveryMaster(system, 2, 60);
    const bursts = new Map<number, BurstOutcome>();
    await Promise.all(
      sales.map(async (sale, i) => {
        const buyers = Array.from({ length: 100 }, (_, b) => `s${sale.id}-buyer-${b}`);
        bursts.set(sale.id, await purchaseBurst(gateways[i % gateways.length]!.url, sale.id, buyers, { connections: 8 }));
      }),
    );
    // Every purchase has been answered: an audit from now on counts them all (in flight, or orders).
    const burstsOver = Date.now();
    for (const sale of sales) {
      const burst = bursts.get(sale.id)!;
      expect({
        sale: sale.id,
        accepted: burst.accepted.size,
        soldOut: burst.refused.SOLD_OUT,
        unknown: burst.unknown.size,
        failed: burst.failed.size,
      }).toEqual({
        sale: sale.id,
        accepted: 60,
        soldOut: 40,
        unknown: 0,
        failed: 0,
      });
      await ctx.store.sale(sale.id).waitForDrain(60_000);
      const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, burst.accepted);
      expect({ sale: sale.id, ...ledger }).toEqual({
        sale: sale.id,
        lost: [],
        duplicated: [],
        unexpected: [],
        unitsInDb: 60,
        remaining: 0,
        stock: 60,
      });
    }

    // The reconcilers audit every sale on the cluster (BullMQ's queues live in the {bull} slot), and an
    // operator's reconcile goes through the same queue and rebuilds from MySQL what Redis already holds.
    const admin = createHttpClient(gateways[0]!.url, 4);
    const auth = { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` };
    try {
      for (const sale of sales) {
        const stats = await until(
          async () => (await admin.send('GET', `/api/admin/sales/${sale.id}/stats`, { headers: auth })).body as unknown as SaleStats,
          (body) => body.audit !== null && Date.parse(body.audit.checkedAt) > burstsOver,
          20_000,
        );
        expect({ sale: sale.id, consistent: stats.consistent, drift: stats.audit?.drift, lost: stats.lost }).toEqual({
          sale: sale.id,
          consistent: true,
          drift: 0,
          lost: { reservations: 0, units: 0 },
        });
      }
      const reconciled = await admin.send('POST', `/api/admin/sales/${sales[0]!.id}/reconcile`, { headers: auth });
      expect(reconciled.status).toBe(200);
      expect(reconciled.body).toMatchObject({
        saleId: sales[0]!.id,
        remaining: 0,
        buyers: 60,
        judgement: 'intact',
        lost: { reservations: 0, units: 0 },
      });
    } finally {
      admin.close();
    }
  });
});
