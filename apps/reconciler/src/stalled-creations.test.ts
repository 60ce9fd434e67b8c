import { describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { salesIndexKey } from '@flashsale/redis-store/testing';
import { createOrderStore } from '@flashsale/order-store';
import { isolatedContextPerTest, redisNow } from '../../../test/support/context.ts';
import { salesDeps, type SaleWatch } from '@flashsale/sales/testing';
import { watchOnce } from '../../../test/support/watch-once.ts';

const env = isolatedContextPerTest();

function watcherDeps(createGraceMs: number): SaleWatch {
  return {
    ...salesDeps({ saleStore: env.ctx.store, prisma: env.ctx.prisma, logger: createLogger('watch-test', 'silent') }),
    publishGraceMs: 0,
    createGraceMs,
    retentionMs: 0,
    watchAfterEndMs: env.ctx.config.RECONCILER_WATCH_AFTER_END_MS,
    retireAfterEndMs: env.ctx.config.RECONCILER_RETIRE_AFTER_END_MS,
    requestReconcile: async () => undefined,
  };
}

/** A create whose request died after publishing to Redis, before marking the row published. */
async function stalledCreate(key: string) {
  const now = await redisNow(env.ctx.redis);
  const body = { name: 'Stalled', stock: 5, perUserLimit: 1, startsAt: new Date(now - 60_000), endsAt: new Date(now + 3_600_000) };
  const start = await createOrderStore(env.ctx.prisma).beginSaleCreation(body, { idempotencyKey: key, requestHash: 'h'.repeat(64) });
  if (start.kind !== 'started') throw new Error('expected a new create');
  await env.ctx.store.publish(start.sale, start.sale.generation);
  return { sale: start.sale, body };
}

/** Makes a create older by `ms`, as if its request had begun that much earlier: the watcher ages creates by MySQL's clock. */
async function backdate(saleId: number, ms: number): Promise<void> {
  await env.ctx.prisma.$executeRaw`UPDATE sales SET created_at = created_at - INTERVAL ${ms * 1000} MICROSECOND WHERE id = ${saleId}`;
}

describe('creates left unfinished (the request died, or could not take back a failed publish)', () => {
  it('are left alone within the grace period: the request may still be finishing them', async () => {
    const { sale } = await stalledCreate('young');

    await watchOnce(watcherDeps(60_000));

    expect((await env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).publishState).toBe('publishing');
    expect(await env.ctx.store.sale(sale.id).state()).not.toBeNull();
  });

  it('are abandoned after it, their Redis state withdrawn and their key released, so they never go live', async () => {
    const { sale, body } = await stalledCreate('stalled');
    await backdate(sale.id, 1100);

    await watchOnce(watcherDeps(1000));

    expect(await env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).toMatchObject({
      publishState: 'abandoned',
      idempotencyKey: null,
    });
    expect(await createOrderStore(env.ctx.prisma).sale(sale.id).find()).toBeNull();
    expect(await env.ctx.store.sale(sale.id).state()).toBeNull();
    expect(await env.ctx.redis.smembers(salesIndexKey(env.ctx.config.REDIS_PREFIX))).not.toContain(String(sale.id));
    // The operator's retry with the same key now makes the sale, once.
    const retry = await createOrderStore(env.ctx.prisma).beginSaleCreation(body, {
      idempotencyKey: 'stalled',
      requestHash: 'h'.repeat(64),
    });
    expect(retry.kind).toBe('started');
  });

  it('stand when they already took a reservation: those buyers were told yes', async () => {
    const { sale } = await stalledCreate('bought');
    const reservationId = newReservationId(sale.id);
    await env.ctx.store.reserve({
      saleId: sale.id,
      userId: 'early',
      quantity: 1,
      reservationId,
    });
    await backdate(sale.id, 1100);

    await watchOnce(watcherDeps(1000));

    expect((await env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).publishState).toBe('published');
    expect(await env.ctx.store.sale(sale.id).state()).toMatchObject({ remaining: 4 });
  });
});
