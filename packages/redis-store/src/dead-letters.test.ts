import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { findDeadLetter } from './dead-letters.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

type Entry = [id: string, fields: string[]];

/** One worker taking every entry of the sale's stream, as the order writers do. */
async function deliverAll(saleId: number): Promise<Entry[]> {
  const reply = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test-consumer', 'STREAMS', saleKeys(ctx.config.REDIS_PREFIX, saleId).stream, '>')) as [string, Entry[]][] | null;
  return reply?.[0]?.[1] ?? [];
}

describe('the dead-letter script (dead-letter-3.lua)', () => {
  it('moves the entry to the dead-letter stream, acknowledges it and records the rejection under the reservation id, in one step', async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 3 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const reservationId = newReservationId(sale.id);
    // A buyer id with what JSON must escape, and characters beyond ASCII, comes back unchanged.
    const userId = 'ann|"x"/\\\u00e9\u{1F600}';
    expect((await reservePurchase(ctx.redis, ctx.config.REDIS_PREFIX, { saleId: sale.id, userId, quantity: 3, reservationId })).kind).toBe('reserved');
    const [[entryId, fields]] = (await deliverAll(sale.id)) as [Entry];

    await ctx.redis.deadLetter(keys.stream, keys.deadLetter, keys.rejected, ORDER_WRITERS_GROUP, entryId, 'OVER_STOCK', 2, ...fields);

    const [[, deadFields]] = (await ctx.redis.xrange(keys.deadLetter, '-', '+')) as [Entry];
    expect(deadFields).toEqual(['id', entryId, 'reason', 'OVER_STOCK', 'deliveries', '2', ...fields]);
    expect(((await ctx.redis.xpending(keys.stream, ORDER_WRITERS_GROUP)) as [number])[0]).toBe(0);
    expect(JSON.parse((await ctx.redis.hget(keys.rejected, reservationId))!)).toEqual({ u: userId, q: '3', reason: 'OVER_STOCK' });
    expect(await findDeadLetter(ctx.redis, ctx.config.REDIS_PREFIX, sale.id, reservationId)).toEqual({ reservationId, userId, quantity: 3, reason: 'OVER_STOCK' });
  });

  it('records nothing to look up for a malformed entry without a reservation id, but still dead-letters it', async () => {
    const sale = await createLiveSale(ctx);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await ctx.redis.xadd(keys.stream, '*', 'u', 'ann', 'q', '1');
    const [[entryId, fields]] = (await deliverAll(sale.id)) as [Entry];

    await ctx.redis.deadLetter(keys.stream, keys.deadLetter, keys.rejected, ORDER_WRITERS_GROUP, entryId, 'MALFORMED_ENTRY', 1, ...fields);

    expect(await ctx.redis.xlen(keys.deadLetter)).toBe(1);
    expect(await ctx.redis.exists(keys.rejected)).toBe(0);
  });

  it.each(['deadLetter', 'rejected'] as const)('fails with nothing written when the %s key holds another type: the entry stays pending', async (poisoned) => {
    const sale = await createLiveSale(ctx);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    expect((await reservePurchase(ctx.redis, ctx.config.REDIS_PREFIX, { saleId: sale.id, userId: 'ann', quantity: 1, reservationId: newReservationId(sale.id) })).kind).toBe('reserved');
    const [[entryId, fields]] = (await deliverAll(sale.id)) as [Entry];
    await ctx.redis.set(keys[poisoned], 'oops');

    await expect(ctx.redis.deadLetter(keys.stream, keys.deadLetter, keys.rejected, ORDER_WRITERS_GROUP, entryId, 'OVER_STOCK', 1, ...fields)).rejects.toThrow(/WRONGTYPE/);

    expect(((await ctx.redis.xpending(keys.stream, ORDER_WRITERS_GROUP)) as [number])[0]).toBe(1);
    expect(await ctx.redis.get(keys[poisoned])).toBe('oops');
    const other = poisoned === 'deadLetter' ? keys.rejected : keys.deadLetter;
    expect(await ctx.redis.exists(other)).toBe(0);
  });

  it('keeps every key of a sale in its hash tag, so the script runs on Redis Cluster', () => {
    const keys = saleKeys('fs', 42);

    expect(Object.values(keys).map((key) => /\{([^}]*)\}/.exec(key)?.[1])).toEqual(Object.values(keys).map(() => 's42'));
    expect(keys.rejected).toBe('fs:{s42}:rejected');
  });
});

describe('findDeadLetter', () => {
  it('finds nothing for a reservation that was never set aside', async () => {
    const sale = await createLiveSale(ctx);

    expect(await findDeadLetter(ctx.redis, ctx.config.REDIS_PREFIX, sale.id, newReservationId(sale.id))).toBeNull();
  });
});
