import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { streamBacklog } from './stream-backlog.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

async function reserveFor(saleId: number, buyers: string[]): Promise<void> {
  for (const userId of buyers) {
    const outcome = await reservePurchase(ctx.redis, ctx.config.REDIS_PREFIX, { saleId, userId, quantity: 1, reservationId: newReservationId(saleId) });
    expect(outcome.kind).toBe('reserved');
  }
}

/** One worker taking entries without acknowledging them yet. */
function deliver(saleId: number, count: number): Promise<unknown> {
  return ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test-consumer', 'COUNT', count, 'STREAMS', saleKeys(ctx.config.REDIS_PREFIX, saleId).stream, '>');
}

describe('streamBacklog', () => {
  it('is empty for a freshly published sale', async () => {
    const sale = await createLiveSale(ctx);

    expect(await streamBacklog(ctx.redis, ctx.config.REDIS_PREFIX, sale.id)).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });

  it('is empty for a sale whose stream does not exist', async () => {
    expect(await streamBacklog(ctx.redis, ctx.config.REDIS_PREFIX, 876_543_210)).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });

  it('counts undelivered entries as lag and delivered, unacknowledged ones as pending', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b', 'c']);
    expect(await streamBacklog(ctx.redis, ctx.config.REDIS_PREFIX, sale.id)).toEqual({ lag: 3, pending: 0, deadLettered: 0 });

    await deliver(sale.id, 2);
    expect(await streamBacklog(ctx.redis, ctx.config.REDIS_PREFIX, sale.id)).toEqual({ lag: 1, pending: 2, deadLettered: 0 });
  });

  it('still counts undelivered entries when Redis cannot (an entry was deleted, lag is null)', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b', 'c', 'd']);
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    const entries = await ctx.redis.xrange(stream, '-', '+');
    await ctx.redis.xdel(stream, entries[1]![0]);
    await deliver(sale.id, 1);

    const groups = (await ctx.redis.xinfo('GROUPS', stream)) as unknown[][];
    expect(groups[0]![groups[0]!.indexOf('lag') + 1]).toBeNull();
    expect(await streamBacklog(ctx.redis, ctx.config.REDIS_PREFIX, sale.id)).toEqual({ lag: 2, pending: 1, deadLettered: 0 });
  });

  it('counts dead-lettered entries, which are no longer pending', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b']);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await deliver(sale.id, 1);
    const [[entryId, fields]] = (await ctx.redis.xrange(keys.stream, '-', '+', 'COUNT', 1)) as [[string, string[]]];

    await ctx.redis.deadLetter(keys.stream, keys.deadLetter, keys.rejected, keys.buyers, ORDER_WRITERS_GROUP, entryId, 'OVER_STOCK', 1, ...fields);

    expect(await streamBacklog(ctx.redis, ctx.config.REDIS_PREFIX, sale.id)).toEqual({ lag: 1, pending: 0, deadLettered: 1 });
  });
});
