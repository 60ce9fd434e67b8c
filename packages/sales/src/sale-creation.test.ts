import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { createOrderStore } from '@flashsale/order-store';
import { redisNow, createSaleStore } from '@flashsale/redis-store';
import type { ReconcileReason } from '@flashsale/jobs';
import { createSale, salesDeps, watchOneSale, type SaleWatch } from '@flashsale/sales/testing';
import { createIsolatedContext, type TestContext } from '../../../test/support/context.ts';
import { startReplicatedRedis, type ReplicatedRedis } from '../../../test/support/replicated-redis.ts';
import { until } from '../../../test/support/until.ts';

// A sale's server failed over before the reconciler's watch first looked at it (a watch busy with other
// sales, a sale created moments before): the promoted replica lacks reservations the old master answered
// 202, and the workers wrote them to MySQL. Real redis-servers, a master and its replica, reached through
// one address the failover moves.

let pair: ReplicatedRedis | undefined;
let ctx: TestContext | undefined;
afterEach(async () => {
  await ctx?.close();
  ctx = undefined;
  await pair?.stop();
  pair = undefined;
});

const replicationIdOf = (info: string) => /^master_replid:(\w+)/m.exec(info)?.[1];

describe('creating a sale', () => {
  it('records a first checkpoint in the history of the Redis server it is published on, so a failover before the first look is asked to be rebuilt', async () => {
    pair = await startReplicatedRedis();
    ctx = await createIsolatedContext({ REDIS_URL: pair.url });
    const { prisma, config } = ctx;
    const prefix = config.REDIS_PREFIX;
    const logger = createLogger('sale-creation-test', 'silent');
    const now = await redisNow(pair.redis);
    const sale = await createSale(
      { ...salesDeps({ saleStore: createSaleStore(pair.redis, prefix), prisma, logger }), publishTimeoutMs: 5_000 },
      {
        name: 'published before the failover',
        stock: 10,
        perUserLimit: 1,
        startsAt: new Date(now - 60_000),
        endsAt: new Date(now + 3_600_000),
      },
      undefined,
      () => true,
    );
    expect(await prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).toMatchObject({
      publishState: 'published',
      checkpointReservations: 0,
      checkpointUnits: 0,
      checkpointStreamId: null,
      checkpointReplicationId: replicationIdOf(await pair.redis.info('replication')),
    });

    // The replica holds the sale, then stops receiving; the master answers three buyers it never sees.
    await until(
      () => createSaleStore(pair!.onReplica, prefix).sale(sale.id).state(),
      (state) => state !== null,
    );
    await pair.onReplica.replicaof('NO', 'ONE');
    for (const userId of ['a', 'b', 'c']) {
      const outcome = await createSaleStore(pair.redis, prefix).reserve({
        saleId: sale.id,
        userId,
        quantity: 1,
        reservationId: newReservationId(sale.id),
      });
      expect(outcome.kind).toBe('reserved');
    }
    await pair.failover();

    // The watch's first look: the promoted replica's counts are those of a sale nobody bought from yet,
    // and only the checkpoint's replication id tells them apart.
    const requested: [number, ReconcileReason][] = [];
    const deps: SaleWatch = {
      ...salesDeps({ saleStore: createSaleStore(pair.redis, prefix), prisma, logger }),
      publishGraceMs: 0,
      createGraceMs: 30_000,
      retentionMs: 60_000,
      watchAfterEndMs: 3_600_000,
      retireAfterEndMs: 3_600_000,
      requestReconcile: async (saleId, reason) => {
        requested.push([saleId, reason]);
      },
    };
    const [listed] = await createOrderStore(prisma).listWatchedSales({ watchAfterEndMs: deps.watchAfterEndMs });
    // Until the client has found the promoted replica behind the moved address (a look that cannot reach Redis throws).
    const visit = await until(
      () => watchOneSale(deps, listed!),
      (seen) => seen !== undefined,
    );
    expect(visit!.snapshot).toMatchObject({ buyers: 0, remaining: 10 });
    expect(visit!.verdict).toEqual({
      kind: 'reconcile',
      reason: 'lost',
      why: expect.stringMatching(/^Redis's history of writes changed since the checkpoint/),
    });
    expect(requested).toEqual([[sale.id, 'lost']]);
  });
});
