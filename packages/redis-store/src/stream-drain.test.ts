import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DrainTimeout, newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { isDrained, waitForDrain } from './stream-drain.ts';
import { saleRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

describe('isDrained', () => {
  it.each([
    [{ lag: 0, pending: 0, deadLettered: 0 }, true],
    [{ lag: 0, pending: 0, deadLettered: 3 }, true],
    [{ lag: 1, pending: 0, deadLettered: 0 }, false],
    [{ lag: 0, pending: 1, deadLettered: 0 }, false],
  ])('%j: %s', (backlog, drained) => {
    expect(isDrained(backlog)).toBe(drained);
  });
});

describe('waitForDrain', () => {
  it('fails with DrainTimeout while an entry is pending, and answers the backlog once it is acknowledged', async () => {
    const sale = await createLiveSale(ctx);
    const reserved = await reservePurchase(
      { redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX },
      {
        saleId: sale.id,
        userId: 'ann',
        quantity: 1,
        reservationId: newReservationId(sale.id),
      },
    );
    expect(reserved.kind).toBe('reserved');
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    const delivered = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test-consumer', 'STREAMS', stream, '>')) as [
      string,
      [string, string[]][],
    ][];
    const entryId = delivered[0]![1][0]![0];

    await expect(waitForDrain(inRedis(sale.id), 100)).rejects.toThrow(DrainTimeout);

    const drained = waitForDrain(inRedis(sale.id), 60_000);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, entryId);
    expect(await drained).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });
});
