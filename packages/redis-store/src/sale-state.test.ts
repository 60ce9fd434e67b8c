import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId, type SaleDefinition } from '@flashsale/domain';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys, salesIndexKey } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { listSaleIds, publishSale, setSalePaused, withdrawSale } from './sale-state.ts';
import { readSaleState, redisNow } from './sale-meta.ts';
import { findBuyerReservation } from './buyer-record.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

const GENERATION = '0b9f3c2e-6f7a-4d8b-9c1e-2a3b4c5d6e7f';

const definition = (id: number, overrides: Partial<SaleDefinition> = {}): SaleDefinition => ({
  id,
  name: `Sale ${id}`,
  stock: 10,
  perUserLimit: 2,
  startsAt: Date.parse('2026-01-01T00:00:00.000Z'),
  endsAt: Date.parse('2036-01-01T00:00:00.000Z'),
  ...overrides,
});

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX });

describe('publishSale', () => {
  it('makes the sale live: meta hash, index entry, and the order writers group on its stream', async () => {
    expect(await publishSale(store(), definition(101), GENERATION)).toBe('published');

    const state = await readSaleState(inRedis(101));
    expect(state).toEqual({
      id: 101,
      name: 'Sale 101',
      stock: 10,
      remaining: 10,
      perUserLimit: 2,
      startsAt: Date.parse('2026-01-01T00:00:00.000Z'),
      endsAt: Date.parse('2036-01-01T00:00:00.000Z'),
      paused: false,
      generation: GENERATION,
      operatorPaused: false,
      controlsVersion: 0,
    });
    expect(await ctx.redis.smembers(salesIndexKey(ctx.config.REDIS_PREFIX))).toContain('101');
    const groups = (await ctx.redis.xinfo('GROUPS', saleKeys(ctx.config.REDIS_PREFIX, 101).stream)) as unknown[][];
    expect(groups.map((group) => group[1])).toEqual([ORDER_WRITERS_GROUP]);
  });

  it('is idempotent and never overwrites the stock of a live sale', async () => {
    const sale = definition(102, { stock: 5 });
    expect(await publishSale(store(), sale, GENERATION)).toBe('published');
    const reservationId = newReservationId(102);
    expect(await reservePurchase(store(), { saleId: 102, userId: 'kim', quantity: 1, reservationId })).toEqual({
      kind: 'reserved',
      remaining: 4,
    });
    const meta = await ctx.redis.hgetall(saleKeys(ctx.config.REDIS_PREFIX, 102).meta);

    expect(await publishSale(store(), sale, GENERATION)).toBe('already_live');
    expect(await publishSale(store(), { ...sale, stock: 50, name: 'Renamed' }, GENERATION)).toBe('already_live');

    expect(await ctx.redis.hgetall(saleKeys(ctx.config.REDIS_PREFIX, 102).meta)).toEqual(meta);
    expect(meta.remaining).toBe('4');
    expect(meta.stock).toBe('5');
    expect(await ctx.redis.xlen(saleKeys(ctx.config.REDIS_PREFIX, 102).stream)).toBe(1);
    expect(await findBuyerReservation(inRedis(102), 'kim')).toEqual({ reservationId, quantity: 1 });
  });

  it('lists every published sale once', async () => {
    const own = createTestContext();
    try {
      await publishSale({ redis: own.redis, prefix: own.config.REDIS_PREFIX }, definition(7), GENERATION);
      await publishSale({ redis: own.redis, prefix: own.config.REDIS_PREFIX }, definition(3), GENERATION);
      await publishSale({ redis: own.redis, prefix: own.config.REDIS_PREFIX }, definition(7), GENERATION);

      expect((await listSaleIds({ redis: own.redis, prefix: own.config.REDIS_PREFIX })).sort((a, b) => a - b)).toEqual([3, 7]);
    } finally {
      await own.close();
    }
  });
});

describe('publishSale with a deadline, and withdrawSale (a create that failed)', () => {
  it('publishes before its deadline, and changes nothing when Redis runs it after (a command held by a hung Redis)', async () => {
    const now = await redisNow(ctx.redis);

    expect(await publishSale(store(), definition(201), GENERATION, { notAfter: now - 1 })).toBe('too_late');
    expect(await ctx.redis.exists(saleKeys(ctx.config.REDIS_PREFIX, 201).meta, saleKeys(ctx.config.REDIS_PREFIX, 201).stream)).toBe(0);
    expect(await publishSale(store(), definition(201), GENERATION, { notAfter: now + 60_000 })).toBe('published');
  });

  it("takes back a sale that has no buyer, from Redis and the workers' index", async () => {
    await publishSale(store(), definition(202), GENERATION);

    expect(await withdrawSale(inRedis(202), GENERATION)).toBe('withdrawn');
    expect(await readSaleState(inRedis(202))).toBeNull();
    expect(await ctx.redis.exists(saleKeys(ctx.config.REDIS_PREFIX, 202).stream)).toBe(0);
    expect(await ctx.redis.smembers(salesIndexKey(ctx.config.REDIS_PREFIX))).not.toContain('202');
    expect(await withdrawSale(inRedis(202), GENERATION)).toBe('absent');
  });

  it('leaves a sale that took a reservation, or holds another generation, as it is', async () => {
    await publishSale(store(), definition(203), GENERATION);
    await reservePurchase(store(), {
      saleId: 203,
      userId: 'kim',
      quantity: 1,
      reservationId: newReservationId(203),
    });
    const before = await readSaleState(inRedis(203));

    expect(await withdrawSale(inRedis(203), GENERATION)).toBe('has_buyers');
    expect(await withdrawSale(inRedis(203), 'another-generation')).toBe('other_generation');
    expect(await readSaleState(inRedis(203))).toEqual(before);
  });
});

describe('readSaleState, setSalePaused, findBuyerReservation', () => {
  it('reads null for a sale Redis does not hold', async () => {
    expect(await readSaleState(inRedis(199))).toBeNull();
  });

  it('pauses and resumes a live sale', async () => {
    await publishSale(store(), definition(104), GENERATION);

    expect(await setSalePaused(inRedis(104), true)).toBe(true);
    expect((await readSaleState(inRedis(104)))?.paused).toBe(true);
    expect(await setSalePaused(inRedis(104), false)).toBe(true);
    expect((await readSaleState(inRedis(104)))?.paused).toBe(false);
  });

  it('resumes only the generation it is given: another state (a replica a rebuild never reached) stays paused', async () => {
    await publishSale(store(), definition(106), GENERATION);
    await setSalePaused(inRedis(106), true);

    expect(await setSalePaused(inRedis(106), false, 'the-rebuilt-generation')).toBe(false);
    expect((await readSaleState(inRedis(106)))?.paused).toBe(true);
    expect(await setSalePaused(inRedis(106), false, GENERATION)).toBe(true);
    expect((await readSaleState(inRedis(106)))?.paused).toBe(false);
    expect(await setSalePaused(inRedis(197), false, GENERATION)).toBe(false);
    expect(await ctx.redis.exists(saleKeys(ctx.config.REDIS_PREFIX, 197).meta)).toBe(0);
  });

  it('does not recreate a missing sale when asked to pause it', async () => {
    expect(await setSalePaused(inRedis(198), true)).toBe(false);

    expect(await ctx.redis.exists(saleKeys(ctx.config.REDIS_PREFIX, 198).meta)).toBe(0);
  });

  it('finds no reservation for a buyer who holds none', async () => {
    await publishSale(store(), definition(105), GENERATION);

    expect(await findBuyerReservation(inRedis(105), 'nobody')).toBeNull();
  });
});
