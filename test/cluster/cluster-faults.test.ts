import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { faultLedgerOf, ledgerOf, mergeBursts, purchaseBurst, type BurstOutcome } from '@flashsale/harness';
import { startClusterSystem, type ClusterSystem } from '../support/system.ts';
import { saleStats, salesOnEveryMaster } from '../support/cluster-sales.ts';
import { until } from '../support/until.ts';
import { convergedOnPrimary } from '../support/converged.ts';

// Faults on a real Redis Cluster, with real processes told only REDIS_CLUSTER_NODES. Every test ends with
// the ledger of every sale.

let system: ClusterSystem | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyersOf = (saleId: number, label: string, count: number) => Array.from({ length: count }, (_, i) => `s${saleId}-${label}-${i}`);

/** Bursts on every sale at once, through the gateways in turn. */
async function burstAll(
  s: ClusterSystem,
  sales: { id: number }[],
  label: string,
  count: number,
  onAnswer?: () => void,
): Promise<Map<number, BurstOutcome>> {
  const bursts = new Map<number, BurstOutcome>();
  await Promise.all(
    sales.map(async (sale, i) => {
      bursts.set(
        sale.id,
        await purchaseBurst(s.gateways[i % s.gateways.length]!.url, sale.id, buyersOf(sale.id, label, count), { connections: 4, onAnswer }),
      );
    }),
  );
  return bursts;
}

/** Waits until the reconciler's checkpoint of every sale has seen `reservations` reservations. */
async function checkpointed(s: ClusterSystem, sales: { id: number }[], reservations: number): Promise<void> {
  for (const sale of sales)
    await until(
      () => s.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } }),
      (row) => row.checkpointReservations === reservations,
      60_000,
    );
}

describe('a Redis Cluster under faults', () => {
  it('a worker SIGKILLed mid-burst: the other takes over its entries on every master, and every 202 becomes one order', async () => {
    system = await startClusterSystem({ gateways: 2, workers: 2 });
    const { ctx } = system;
    const sales = await salesOnEveryMaster(system, 2, 100);
    let answers = 0;
    let killed: Promise<unknown> | undefined;
    const bursts = await burstAll(system, sales, 'buyer', 150, () => {
      if (++answers === 300) killed = system!.workers[0]!.kill('SIGKILL');
    });
    await killed;
    for (const sale of sales) {
      const burst = bursts.get(sale.id)!;
      expect({ sale: sale.id, accepted: burst.accepted.size, unknown: burst.unknown.size, failed: burst.failed.size }).toEqual({
        sale: sale.id,
        accepted: 100,
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
        unitsInDb: 100,
        remaining: 0,
        stock: 100,
      });
    }
  });

  it('one master flushed mid-sale: only its sales lose reservations, counted; the others lose nothing; every sale sells exactly its stock', async () => {
    // No worker during the first burst, so what the flush destroys is known exactly: every reservation
    // of the flushed master's sales, none of them written yet.
    system = await startClusterSystem({ gateways: 2, workers: 0 });
    const s = system;
    const { ctx } = s;
    const sales = await salesOnEveryMaster(s, 2, 100);
    const first = await burstAll(s, sales, 'early', 60);
    for (const sale of sales) expect(first.get(sale.id)!.accepted.size).toBe(60);
    // The reconciler has checkpointed what each sale accepted (it looks at a changed sale every 200 ms here).
    await checkpointed(s, sales, 60);

    const flushed = sales[0]!.master;
    const node = new Redis(`redis://127.0.0.1:${flushed}`);
    await node.flushall();
    node.disconnect();
    await s.addWorker();
    await s.addWorker();
    const onFlushed = sales.filter((sale) => sale.master === flushed);
    const others = sales.filter((sale) => sale.master !== flushed);

    // The reconciler finds the flushed master's sales lost, waits for their (empty) drain and rebuilds
    // them from MySQL, counting what the checkpoint saw that never became an order.
    for (const sale of onFlushed) {
      const stats = await until(
        () => saleStats(s, sale.id),
        (st) => st.lost.reservations > 0 && st.remaining === 100,
        60_000,
      );
      expect({ sale: sale.id, lost: stats.lost }).toEqual({ sale: sale.id, lost: { reservations: 60, units: 60 } });
      // The rebuilt state is in Redis, paused, before the reconciliation resumes it: the burst below waits.
      await convergedOnPrimary(s, sale.id);
    }
    for (const sale of others) await ctx.store.sale(sale.id).waitForDrain(60_000);

    // Selling goes on: new buyers take what is left, on every master.
    const second = await burstAll(s, sales, 'late', 100);
    for (const sale of sales) {
      await ctx.store.sale(sale.id).waitForDrain(60_000);
      const both = mergeBursts(first.get(sale.id)!, second.get(sale.id)!);
      const ledger = await faultLedgerOf(ctx.store, ctx.prisma, sale.id, both.accepted, new Set());
      const lostFirst = [...first.get(sale.id)!.accepted.keys()].filter((id) => ledger.lost.includes(id));
      if (sale.master === flushed) {
        // Every early 202 of the flushed master went with its data; the late buyers bought all 100 units.
        expect({
          sale: sale.id,
          lost: lostFirst.length,
          lostTotal: ledger.lost.length,
          accepted: second.get(sale.id)!.accepted.size,
        }).toEqual({ sale: sale.id, lost: 60, lostTotal: 60, accepted: 100 });
      } else {
        expect({
          sale: sale.id,
          lost: ledger.lost.length,
          accepted: second.get(sale.id)!.accepted.size,
          lostCounted: (await saleStats(s, sale.id)).lost,
        }).toEqual({
          sale: sale.id,
          lost: 0,
          accepted: 40,
          lostCounted: { reservations: 0, units: 0 },
        });
      }
      expect({
        sale: sale.id,
        duplicated: ledger.duplicated,
        unexpected: ledger.unexpected,
        oversold: ledger.oversold,
        unitsInDb: ledger.unitsInDb,
        remaining: ledger.remaining,
      }).toEqual({
        sale: sale.id,
        duplicated: [],
        unexpected: [],
        oversold: 0,
        unitsInDb: 100,
        remaining: 0,
      });
    }
  });

  it('a master fails over to a replica that missed its last writes: the reconciler notices the sales went back, counts the loss, rebuilds; nothing oversold', async () => {
    system = await startClusterSystem({ gateways: 2, workers: 2, replicasPerMaster: 1 });
    const s = system;
    const { ctx, cluster } = s;
    const sales = await salesOnEveryMaster(s, 1, 200);
    const failing = (await cluster.masters()).find((m) => m.port === sales[0]!.master)!;
    const [replica] = await cluster.replicasOf(failing);
    const first = await burstAll(s, sales, 'early', 60);
    for (const sale of sales) await ctx.store.sale(sale.id).waitForDrain(60_000);
    await checkpointed(s, sales, 60);
    // What the replica will come back with: its state now (an RDB it loads when it starts again).
    const snapshot = new Redis(replica!.url);
    await snapshot.save();
    snapshot.disconnect();

    // With no worker running, the next reservations live in Redis only; the reconciler checkpoints them.
    for (const worker of s.workers) await worker.kill('SIGKILL');
    const missed = await burstAll(s, sales, 'missed', 60);
    for (const sale of sales) expect(missed.get(sale.id)!.accepted.size).toBe(60);
    await checkpointed(s, sales, 120);

    // The master dies, and its replica comes back from its older state and takes over its slots:
    // asynchronous replication's worst case, a failover to a replica that had not caught up.
    await failing.kill('SIGKILL');
    await replica!.kill('SIGKILL');
    await replica!.start();
    const takeover = new Redis(replica!.url);
    await takeover.cluster('FAILOVER', 'TAKEOVER');
    takeover.disconnect();
    await until(
      async () => (await cluster.masters()).map((m) => m.port),
      (ports) => ports.includes(replica!.port),
      20_000,
    );
    await s.addWorker();
    await s.addWorker();

    // The reconciler sees the failed-over sale with fewer buyers than its checkpoint, counts the
    // reservations the checkpoint saw that are not orders, and rebuilds it from MySQL.
    const onFailed = sales.filter((sale) => sale.master === failing.port);
    for (const sale of onFailed) {
      const stats = await until(
        () => saleStats(s, sale.id),
        (st) => st.lost.reservations > 0 && st.remaining === 140,
        60_000,
      );
      expect({ sale: sale.id, lost: stats.lost }).toEqual({ sale: sale.id, lost: { reservations: 60, units: 60 } });
      // The stale replica's own state already has 140 remaining: what counts is the rebuild, resumed.
      await convergedOnPrimary(s, sale.id);
    }
    const late = await burstAll(s, sales, 'late', 200);
    for (const sale of sales) {
      await ctx.store.sale(sale.id).waitForDrain(60_000);
      const all = mergeBursts(first.get(sale.id)!, missed.get(sale.id)!, late.get(sale.id)!);
      const ledger = await faultLedgerOf(ctx.store, ctx.prisma, sale.id, all.accepted, new Set([...all.unknown, ...all.failed]));
      const failedOver = sale.master === failing.port;
      expect({
        sale: sale.id,
        lost: ledger.lost.length,
        counted: (await saleStats(s, sale.id)).lost.reservations,
        lateAccepted: late.get(sale.id)!.accepted.size,
        duplicated: ledger.duplicated,
        unexpected: ledger.unexpected,
        oversold: ledger.oversold,
        unitsInDb: ledger.unitsInDb,
        remaining: ledger.remaining,
      }).toEqual({
        sale: sale.id,
        // Only the failed-over master's sale lost its 60 Redis-only reservations, each counted; its 60
        // units went back on sale and were sold again.
        lost: failedOver ? 60 : 0,
        counted: failedOver ? 60 : 0,
        lateAccepted: failedOver ? 140 : 80,
        duplicated: [],
        unexpected: [],
        oversold: 0,
        unitsInDb: 200,
        remaining: 0,
      });
    }
  });
});
