import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { streamBacklog } from './stream-backlog.ts';
import { trimAcknowledged } from './stream-retention.ts';
import { saleRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

/** A sale with `count` reservations on its stream; returns the stream key and the entry ids in order. */
async function saleWithEntries(count: number) {
  const sale = await createLiveSale(ctx, { stock: 100 });
  for (let i = 0; i < count; i++) {
    const outcome = await reservePurchase(
      { redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX },
      {
        saleId: sale.id,
        userId: `b${i}`,
        quantity: 1,
        reservationId: newReservationId(sale.id),
      },
    );
    expect(outcome.kind).toBe('reserved');
  }
  const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
  const ids = ((await ctx.redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id);
  return { sale, stream, ids };
}

async function deliver(stream: string, count: number): Promise<string[]> {
  const reply = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test-consumer', 'COUNT', count, 'STREAMS', stream, '>')) as [
    string,
    [string, string[]][],
  ][];
  return reply[0]![1].map(([id]) => id);
}

const NO_BOUNDS = { keepFrom: null, keepSinceMs: null };

const remaining = async (stream: string) => ((await ctx.redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id);

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

describe('trimAcknowledged', () => {
  it('removes acknowledged entries only: pending and undelivered ones stay, and the backlog reads the same', async () => {
    const { sale, stream, ids } = await saleWithEntries(10);
    const delivered = await deliver(stream, 6);
    // Acknowledged: 0, 1, 3. Pending: 2, 4, 5. Undelivered: 6..9.
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, delivered[0]!, delivered[1]!, delivered[3]!);
    const backlogBefore = await streamBacklog(inRedis(sale.id));

    expect(await trimAcknowledged(inRedis(sale.id), NO_BOUNDS)).toBe(2);
    // Entry 3 is acknowledged but after the oldest pending one (2): kept, as trimming only cuts a prefix.
    expect(await remaining(stream)).toEqual(ids.slice(2));
    expect(await streamBacklog(inRedis(sale.id))).toEqual(backlogBefore);
    expect(backlogBefore).toEqual({ lag: 4, pending: 3, deadLettered: 0 });
  });

  it('keeps the entry it is told to keep, and every later one', async () => {
    const { sale, stream, ids } = await saleWithEntries(8);
    const delivered = await deliver(stream, 8);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...delivered);

    expect(await trimAcknowledged(inRedis(sale.id), { keepFrom: ids[5]!, keepSinceMs: null })).toBe(5);
    expect(await remaining(stream)).toEqual(ids.slice(5));
    // Without a bound, a fully acknowledged stream is emptied.
    expect(await trimAcknowledged(inRedis(sale.id), NO_BOUNDS)).toBe(3);
    expect(await remaining(stream)).toEqual([]);
    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });

  it('stops at the first undelivered entry', async () => {
    const { sale, stream, ids } = await saleWithEntries(6);
    const delivered = await deliver(stream, 4);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...delivered);

    expect(await trimAcknowledged(inRedis(sale.id), NO_BOUNDS)).toBe(4);
    expect(await remaining(stream)).toEqual(ids.slice(4));
  });

  it('stops at the oldest pending entry even when the entry to keep is later', async () => {
    const { sale, stream, ids } = await saleWithEntries(6);
    const delivered = await deliver(stream, 6);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, delivered[0]!, delivered[2]!, delivered[3]!, delivered[4]!, delivered[5]!);

    expect(await trimAcknowledged(inRedis(sale.id), { keepFrom: ids[4]!, keepSinceMs: null })).toBe(1);
    expect(await remaining(stream)).toEqual(ids.slice(1));
  });

  it('keeps every entry added since the time it is given, and tells entries of one millisecond apart by sequence', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    // Ids chosen by hand: three in one millisecond, then two later ones.
    const ids = ['5000-0', '5000-1', '5000-2', '7000-0', '9000-0'];
    for (const id of ids) await ctx.redis.xadd(stream, id, 'r', 'x');
    const delivered = await deliver(stream, 5);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...delivered);

    expect(await trimAcknowledged(inRedis(sale.id), { keepFrom: '5000-2', keepSinceMs: null })).toBe(2);
    expect(await remaining(stream)).toEqual(ids.slice(2));
    expect(await trimAcknowledged(inRedis(sale.id), { keepFrom: null, keepSinceMs: 7000 })).toBe(1);
    expect(await remaining(stream)).toEqual(ids.slice(3));
  });

  it('keeps entries for their age while the stream holds at most maxEntries, and beyond removes every acknowledged one, down to the first in flight', async () => {
    const { sale, stream, ids } = await saleWithEntries(10);
    const delivered = await deliver(stream, 8);
    // Acknowledged: 0..5. Pending: 6, 7. Undelivered: 8, 9. All of them young enough to keep.
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...delivered.slice(0, 6));
    const young = { keepFrom: null, keepSinceMs: 0 };

    expect(await trimAcknowledged(inRedis(sale.id), { ...young, maxEntries: 10 })).toBe(0);
    expect(await trimAcknowledged(inRedis(sale.id), young)).toBe(0);
    expect(await remaining(stream)).toEqual(ids);
    expect(await trimAcknowledged(inRedis(sale.id), { ...young, maxEntries: 9 })).toBe(6);
    expect(await remaining(stream)).toEqual(ids.slice(6));
    // Pending and undelivered entries stay, however far beyond the bound.
    expect(await trimAcknowledged(inRedis(sale.id), { ...young, maxEntries: 0 })).toBe(0);
    expect(await remaining(stream)).toEqual(ids.slice(6));
  });

  it('keeps the entry it is told to keep, and every later one, beyond maxEntries', async () => {
    const { sale, stream, ids } = await saleWithEntries(8);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...(await deliver(stream, 8)));

    expect(await trimAcknowledged(inRedis(sale.id), { keepFrom: ids[3]!, keepSinceMs: 0, maxEntries: 1 })).toBe(3);
    expect(await remaining(stream)).toEqual(ids.slice(3));
  });

  it('removes nothing before anything was delivered, and nothing from a missing stream', async () => {
    const { sale, stream, ids } = await saleWithEntries(3);

    expect(await trimAcknowledged(inRedis(sale.id), NO_BOUNDS)).toBe(0);
    expect(await remaining(stream)).toEqual(ids);
    expect(await trimAcknowledged(inRedis(987_654_321), NO_BOUNDS)).toBe(0);
  });

  it('removes nothing when the group is gone', async () => {
    const { sale, stream, ids } = await saleWithEntries(3);
    await deliver(stream, 3);
    await ctx.redis.xgroup('DESTROY', stream, ORDER_WRITERS_GROUP);

    expect(await trimAcknowledged(inRedis(sale.id), NO_BOUNDS)).toBe(0);
    expect(await remaining(stream)).toEqual(ids);
  });
});
