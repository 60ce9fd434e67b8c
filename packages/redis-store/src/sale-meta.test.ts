import { describe, expect, it } from 'vitest';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { saleKeys } from './keys.ts';
import { setSalePaused } from './sale-state.ts';
import { redisNow, redisTimeMs, SALE_COUNTER_FIELDS, saleCountersOf } from './sale-meta.ts';
import { saleRef } from './store-ref.ts';

const env = contextPerFile();

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

describe('the sale meta', () => {
  it('gives the counters the scripts wrote, read in a MULTI with other keys', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 7 });
    await setSalePaused(inRedis(sale.id), true);

    const reply = await env.ctx.redis.hmget(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).meta, ...SALE_COUNTER_FIELDS);

    expect(saleCountersOf(reply)).toEqual({
      stock: 7,
      remaining: 7,
      generation: sale.generation,
      paused: true,
      returnedUnits: 0,
      returnedReservations: 0,
      controlsVersion: 0,
      operatorPaused: false,
    });
  });

  it('has no counters for a sale Redis does not hold', () => {
    expect(saleCountersOf([null, null, null, null, null])).toBeNull();
  });

  it("reads Redis's TIME as epoch milliseconds, the microseconds truncated", async () => {
    expect(redisTimeMs(['1700000000', '123999'])).toBe(1_700_000_000_123);
    const before = redisTimeMs(await env.ctx.redis.time());
    const now = await redisNow(env.ctx.redis);
    const after = redisTimeMs(await env.ctx.redis.time());
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
  });
});
