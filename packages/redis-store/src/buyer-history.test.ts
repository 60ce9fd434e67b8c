import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ReserveCode, type RebuyRule } from '@flashsale/domain';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { snapshotSale } from '../../../test/support/sale-snapshot.ts';
import { reserveArgs, reservePurchase, type ReserveOutcome } from './reserve-purchase.ts';
import { returnUnits } from './stock-return.ts';
import { readClosedOrders, restoreClosedOrders } from './buyer-history.ts';
import { readSaleState, redisNow } from './sale-meta.ts';
import { publishSale } from './sale-state.ts';
import { saleKeys } from './keys.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

const env = contextPerFile();

async function saleWithRule(rebuyRule: RebuyRule, stock = 5) {
  return createLiveSale(env.ctx, { stock, rebuyRule });
}

function reserve(saleId: number, userId: string, reservationId = `${saleId}-${randomUUID()}`): Promise<ReserveOutcome> {
  return reservePurchase(store(), { saleId, userId, quantity: 1, reservationId });
}

/** One order opened and closed (cancelled or expired in MySQL, its units back in Redis). */
async function openAndClose(sale: { id: number; generation: string }, userId: string): Promise<void> {
  const reservationId = `${sale.id}-${randomUUID()}`;
  expect(await reserve(sale.id, userId, reservationId)).toMatchObject({ kind: 'reserved' });
  const returned = await returnUnits(inRedis(sale.id), sale.generation, [{ reservationId, userId, quantity: 1 }]);
  expect(returned).toEqual({ kind: 'applied', results: ['returned'] });
}

/** A refused purchase, and proof that it wrote nothing: the sale's keys and the buyers' closed orders as before. */
async function expectRefused(
  saleId: number,
  userId: string,
  expected: ReserveOutcome | ((outcome: ReserveOutcome) => void),
): Promise<void> {
  const closedKey = saleKeys(env.ctx.config.REDIS_PREFIX, saleId).closed;
  const before = [await snapshotSale(env.ctx, saleId), await env.ctx.redis.hgetall(closedKey)];
  const outcome = await reserve(saleId, userId);
  if (typeof expected === 'function') expected(outcome);
  else expect(outcome).toEqual(expected);
  expect([await snapshotSale(env.ctx, saleId), await env.ctx.redis.hgetall(closedKey)]).toEqual(before);
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: env.ctx.redis, prefix: env.ctx.config.REDIS_PREFIX });

describe('the rebuy rule (reserve.lua, return-units-4.lua)', () => {
  it("a call given an open sale's 3 keys, once an order of the sale was closed, is asked for the closed hash before anything is written; reservePurchase passes it from then on", async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 2, rebuyCooldownSeconds: 0 });
    const keys = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id);
    const withThreeKeys = (userId: string) => env.ctx.redis.reserve(...reserveArgs(keys, userId, 1, `${sale.id}-${randomUUID()}`, 3));
    expect(await withThreeKeys('ann')).toBe(4);

    await openAndClose(sale, 'bot');
    const before = await snapshotSale(env.ctx, sale.id);
    expect(await withThreeKeys('cy')).toEqual([ReserveCode.NeedsKeys, 4]);
    expect(await snapshotSale(env.ctx, sale.id)).toEqual(before);

    // The rule is read: the bot's second order is its last, a third is refused.
    expect(await reserve(sale.id, 'bot')).toMatchObject({ kind: 'reserved' });
    expect(await reserve(sale.id, 'cy')).toMatchObject({ kind: 'reserved' });
  });

  it('lets a buyer buy again at once after a first closed order, makes them wait the cooldown after the second, doubled after the third', async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 5, rebuyCooldownSeconds: 1 });

    await openAndClose(sale, 'bot');
    await openAndClose(sale, 'bot');
    await expectRefused(sale.id, 'bot', (outcome) => {
      expect(outcome.kind).toBe('rebuy_cooldown');
      expect((outcome as { waitMs: number }).waitMs).toBeGreaterThan(0);
      expect((outcome as { waitMs: number }).waitMs).toBeLessThanOrEqual(1000);
    });
    // Someone else is not held back by the bot's history.
    expect(await reserve(sale.id, 'honest')).toMatchObject({ kind: 'reserved' });

    const closed = await readClosedOrders(inRedis(sale.id), 'bot');
    expect(closed!.closedOrders).toBe(2);
    // Past the cooldown on Redis's clock (polled: the machine may be slow, never fast).
    while ((await redisNow(env.ctx.redis)) < closed!.lastClosedAt + 1000) await sleep(50);
    await openAndClose(sale, 'bot');

    await expectRefused(sale.id, 'bot', (outcome) => {
      expect(outcome.kind).toBe('rebuy_cooldown');
      expect((outcome as { waitMs: number }).waitMs).toBeGreaterThan(1000);
      expect((outcome as { waitMs: number }).waitMs).toBeLessThanOrEqual(2000);
    });
  });

  it('refuses the order past the most a buyer may open, for good, whatever the cooldown', async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 2, rebuyCooldownSeconds: 0 });

    await openAndClose(sale, 'bot');
    await openAndClose(sale, 'bot');

    await expectRefused(sale.id, 'bot', { kind: 'order_limit_reached', maxOrders: 2 });
    expect((await readSaleState(inRedis(sale.id)))!.remaining).toBe(5);
  });

  it('tells a buyer who holds a live order their reservation before anything of the rule', async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 1, rebuyCooldownSeconds: 0 });
    const reservationId = `${sale.id}-${randomUUID()}`;
    expect(await reserve(sale.id, 'buyer', reservationId)).toMatchObject({ kind: 'reserved' });

    expect(await reserve(sale.id, 'buyer')).toEqual({ kind: 'already_purchased', reservationId, quantity: 1 });
  });

  it('counts a closed order once, however often its return is repeated', async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 3, rebuyCooldownSeconds: 30 });
    const order = { reservationId: `${sale.id}-${randomUUID()}`, userId: 'buyer', quantity: 1 };
    expect(await reserve(sale.id, 'buyer', order.reservationId)).toMatchObject({ kind: 'reserved' });

    for (let i = 0; i < 3; i++) await returnUnits(inRedis(sale.id), sale.generation, [order]);

    expect((await readClosedOrders(inRedis(sale.id), 'buyer'))!.closedOrders).toBe(1);
    expect(await reserve(sale.id, 'buyer')).toMatchObject({ kind: 'reserved' });
  });

  it('publishes the rule into the sale meta, and a sale published without one keeps no count against anyone', async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 4, rebuyCooldownSeconds: 12 });
    expect((await readSaleState(inRedis(sale.id)))!.rebuyRule).toEqual({
      maxOrdersPerBuyer: 4,
      rebuyCooldownSeconds: 12,
    });

    const bare = await createLiveSale(env.ctx, { stock: 2 });
    await env.ctx.redis.del(saleKeys(env.ctx.config.REDIS_PREFIX, bare.id).meta);
    const { rebuyRule: _, ...withoutRule } = bare;
    await publishSale(store(), withoutRule, bare.generation);
    for (let i = 0; i < 5; i++) await openAndClose(bare, 'buyer');
    expect(await reserve(bare.id, 'buyer')).toMatchObject({ kind: 'reserved' });
  });
});

describe('restoreClosedOrders (restore-closed-2.lua)', () => {
  it("writes the rule and merges the counts: each buyer keeps the record with the larger count, Redis's own on a tie", async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 3, rebuyCooldownSeconds: 30 });
    await openAndClose(sale, 'ahead-in-redis');
    await openAndClose(sale, 'ahead-in-redis');
    const held = await readClosedOrders(inRedis(sale.id), 'ahead-in-redis');
    await env.ctx.redis.hdel(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).meta, 'rb_max', 'rb_cool');
    await env.ctx.redis.hset(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).closed, 'ahead-in-mysql', '1|5000', 'tied', '2|8000');

    const rule = { maxOrdersPerBuyer: 7, rebuyCooldownSeconds: 5 };
    const restored = await restoreClosedOrders(inRedis(sale.id), rule, [
      { userId: 'ahead-in-redis', closedOrders: 1, lastClosedAt: 1000 },
      { userId: 'only-in-mysql', closedOrders: 3, lastClosedAt: 2000 },
      { userId: 'ahead-in-mysql', closedOrders: 3, lastClosedAt: 4000 },
      { userId: 'tied', closedOrders: 2, lastClosedAt: 9000 },
    ]);

    expect(restored).toBe('restored');
    expect((await readSaleState(inRedis(sale.id)))!.rebuyRule).toEqual(rule);
    expect(await readClosedOrders(inRedis(sale.id), 'ahead-in-redis')).toEqual(held);
    expect(await readClosedOrders(inRedis(sale.id), 'only-in-mysql')).toEqual({
      userId: 'only-in-mysql',
      closedOrders: 3,
      lastClosedAt: 2000,
    });
    expect(await readClosedOrders(inRedis(sale.id), 'ahead-in-mysql')).toEqual({
      userId: 'ahead-in-mysql',
      closedOrders: 3,
      lastClosedAt: 4000,
    });
    expect(await readClosedOrders(inRedis(sale.id), 'tied')).toEqual({
      userId: 'tied',
      closedOrders: 2,
      lastClosedAt: 8000,
    });
  });

  it('writes pages of any size, and nothing for a sale that is not in Redis', async () => {
    const sale = await saleWithRule({ maxOrdersPerBuyer: 3, rebuyCooldownSeconds: 30 });
    const buyers = Array.from({ length: 450 }, (_, i) => ({ userId: `b${i}`, closedOrders: 1 + (i % 3), lastClosedAt: 5000 + i }));

    expect(await restoreClosedOrders(inRedis(sale.id), sale.rebuyRule, buyers)).toBe('restored');
    expect(await env.ctx.redis.hlen(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).closed)).toBe(450);

    expect(await restoreClosedOrders(inRedis(2_000_000_000), sale.rebuyRule, buyers)).toBe('absent');
    expect(await env.ctx.redis.exists(saleKeys(env.ctx.config.REDIS_PREFIX, 2_000_000_000).closed)).toBe(0);
  });
});
