import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLiveSale, isolatedContextOnOwnRedis } from '../../../test/support/context.ts';
import { redisWorkOf } from '../../../test/support/command-stats.ts';
import { reservePurchase, type ReserveOutcome } from './reserve-purchase.ts';
import { returnUnits } from './stock-return.ts';
import { restoreClosedOrders } from './buyer-history.ts';
import { applySaleControls } from './sale-controls.ts';
import { rebuildSaleState } from './sale-rebuild.ts';
import { redisNow } from './sale-meta.ts';
import { setSalePaused } from './sale-state.ts';
import { saleKeys } from './keys.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

// The sale's packed terms (the meta's `terms`, lua/includes/sale-meta.lua): every script that writes a
// field they pack rewrites them in the same step, and the reserve script judges by them. A redis-server
// of the test's own, so its command counts are this test's work only.
const own = isolatedContextOnOwnRedis();

const prefix = () => own.ctx.config.REDIS_PREFIX;
const metaOf = (saleId: number) => saleKeys(prefix(), saleId).meta;

function reserve(saleId: number, userId: string, reservationId = `${saleId}-${randomUUID()}`): Promise<ReserveOutcome> {
  return reservePurchase(store(), { saleId, userId, quantity: 1, reservationId });
}

async function openAndClose(sale: { id: number; generation: string }, userId: string): Promise<void> {
  const reservationId = `${sale.id}-${randomUUID()}`;
  expect(await reserve(sale.id, userId, reservationId)).toMatchObject({ kind: 'reserved' });
  expect(await returnUnits(inRedis(sale.id), sale.generation, [{ reservationId, userId, quantity: 1 }])).toEqual({
    kind: 'applied',
    results: ['returned'],
  });
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(own.ctx.redis, own.ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: own.ctx.redis, prefix: prefix() });

describe("the sale's packed terms", () => {
  it('are what the reserve script judges by: a field written without them is not seen', async () => {
    const sale = await createLiveSale(own.ctx, { stock: 7, perUserLimit: 1 });
    await own.ctx.redis.hset(metaOf(sale.id), 'limit', '5', 'paused', '1');

    expect(await reservePurchase(store(), { saleId: sale.id, userId: 'a', quantity: 2, reservationId: `${sale.id}-a` })).toEqual({
      kind: 'above_limit',
      limit: 1,
    });
    expect(await reserve(sale.id, 'a')).toEqual({ kind: 'reserved', remaining: 6 });
  });

  it('follow a control applied: the operator closes the sale, pauses it, resumes it', async () => {
    const sale = await createLiveSale(own.ctx, { stock: 5 });
    const controls = { version: 1, stock: 5, endsAt: sale.endsAt, operatorPaused: true };

    expect(await applySaleControls(inRedis(sale.id), controls)).toBe('applied');
    expect(await reserve(sale.id, 'a')).toEqual({ kind: 'sale_paused' });
    expect(await applySaleControls(inRedis(sale.id), { ...controls, version: 2, operatorPaused: false })).toBe('applied');
    expect(await reserve(sale.id, 'a')).toEqual({ kind: 'reserved', remaining: 4 });
    const ended = { ...controls, version: 3, operatorPaused: false, endsAt: (await redisNow(own.ctx.redis)) - 1 };
    expect(await applySaleControls(inRedis(sale.id), ended)).toBe('applied');
    expect(await reserve(sale.id, 'b')).toEqual({ kind: 'sale_ended' });
  });

  it("follow the reconciler's pause and resume", async () => {
    const sale = await createLiveSale(own.ctx, { stock: 5 });

    expect(await setSalePaused(inRedis(sale.id), true)).toBe(true);
    expect(await reserve(sale.id, 'a')).toEqual({ kind: 'sale_paused' });
    expect(await setSalePaused(inRedis(sale.id), false)).toBe(true);
    expect(await reserve(sale.id, 'a')).toEqual({ kind: 'reserved', remaining: 4 });
  });

  it("follow a rebuild: the purchase is judged by the rebuilt sale's limit, end and generation", async () => {
    const sale = await createLiveSale(own.ctx, { stock: 5, perUserLimit: 1 });
    const rebuilt = { ...sale, perUserLimit: 3, operatorPaused: false, controlsVersion: 0 };

    await rebuildSaleState(store(), rebuilt, {
      remaining: 5,
      generation: 'gen-2',
      buyers: (async function* () {})(),
    });
    expect(await reserve(sale.id, 'a')).toEqual({ kind: 'sale_paused' });
    expect(await setSalePaused(inRedis(sale.id), false, 'gen-2')).toBe(true);
    expect(
      await reservePurchase(store(), {
        saleId: sale.id,
        userId: 'a',
        quantity: 3,
        reservationId: `${sale.id}-${randomUUID()}`,
      }),
    ).toEqual({ kind: 'reserved', remaining: 2 });
    const [entry] = await own.ctx.redis.xrange(saleKeys(prefix(), sale.id).stream, '-', '+');
    expect(entry![1].slice(-2)).toEqual(['g', 'gen-2']);
  });

  it('work for a meta written before them: the fields are read one by one, and closed orders from before count', async () => {
    const sale = await createLiveSale(own.ctx, { stock: 5, rebuyRule: { maxOrdersPerBuyer: 1, rebuyCooldownSeconds: 0 } });
    await openAndClose(sale, 'closer');
    // As a version before `terms` (and `closed`) left the meta; its closed hash holds the close.
    await own.ctx.redis.hdel(metaOf(sale.id), 'terms', 'closed');
    await own.ctx.redis.hset(metaOf(sale.id), 'limit', '2');

    expect(await reservePurchase(store(), { saleId: sale.id, userId: 'a', quantity: 2, reservationId: `${sale.id}-x` })).toEqual({
      kind: 'reserved',
      remaining: 3,
    });
    expect(await reserve(sale.id, 'closer')).toEqual({ kind: 'order_limit_reached', maxOrders: 1 });
    await own.ctx.redis.hset(metaOf(sale.id), 'op_paused', '1');
    expect(await reserve(sale.id, 'b')).toEqual({ kind: 'sale_paused' });
    await own.ctx.redis.hset(metaOf(sale.id), 'op_paused', '0');

    // The first writer of a field after the upgrade writes the terms, and counts the closes from before.
    expect(await setSalePaused(inRedis(sale.id), false)).toBe(true);
    expect(await own.ctx.redis.hexists(metaOf(sale.id), 'terms')).toBe(1);
    expect(await own.ctx.redis.hget(metaOf(sale.id), 'closed')).toBe('1');
    expect(await reservePurchase(store(), { saleId: sale.id, userId: 'b', quantity: 2, reservationId: `${sale.id}-b` })).toEqual({
      kind: 'reserved',
      remaining: 1,
    });
    expect(await reserve(sale.id, 'closer')).toEqual({ kind: 'order_limit_reached', maxOrders: 1 });
  });
});

describe("the rebuy rule's read of a buyer's closed orders", () => {
  it('is not made in a sale where no order was closed, and is from the first close on (return-units-4.lua)', async () => {
    const sale = await createLiveSale(own.ctx, { stock: 10, rebuyRule: { maxOrdersPerBuyer: 1, rebuyCooldownSeconds: 0 } });

    const before = await redisWorkOf(own.server.url, () => reserve(sale.id, 'a'));
    expect(before.commands).toEqual({ evalsha: 1, hget: 3, time: 1, xadd: 1, hincrby: 1, hset: 1 });
    expect(await own.ctx.redis.hget(metaOf(sale.id), 'closed')).toBe('0');

    await openAndClose(sale, 'closer');
    expect(await own.ctx.redis.hget(metaOf(sale.id), 'closed')).toBe('1');
    // This process learns it here: its call given an open sale's 3 keys is answered "needs 4" after the
    // terms' HGET, and made again with the closed hash; every later call is one EVALSHA.
    const learning = await redisWorkOf(own.server.url, () => reserve(sale.id, 'b'));
    expect(learning.commands).toEqual({ evalsha: 2, hget: 5, time: 1, xadd: 1, hincrby: 1, hset: 1 });
    const after = await redisWorkOf(own.server.url, () => reserve(sale.id, 'c'));
    expect(after.commands).toEqual({ evalsha: 1, hget: 4, time: 1, xadd: 1, hincrby: 1, hset: 1 });
    expect(await reserve(sale.id, 'closer')).toEqual({ kind: 'order_limit_reached', maxOrders: 1 });
  });

  it('is made again after a rebuild once the closed orders are restored (restore-closed-2.lua)', async () => {
    const rule = { maxOrdersPerBuyer: 1, rebuyCooldownSeconds: 0 };
    const sale = await createLiveSale(own.ctx, { stock: 10, rebuyRule: rule });
    await openAndClose(sale, 'closer');
    const rebuilt = { ...sale, operatorPaused: false, controlsVersion: 0 };

    // The rebuild writes a new meta; the closed hash outlives it, and the restore marks it again.
    await rebuildSaleState(store(), rebuilt, {
      remaining: 10,
      generation: 'gen-2',
      buyers: (async function* () {})(),
    });
    expect(await own.ctx.redis.hget(metaOf(sale.id), 'closed')).toBe('0');
    expect(await restoreClosedOrders(inRedis(sale.id), rule, [])).toBe('restored');
    expect(await setSalePaused(inRedis(sale.id), false, 'gen-2')).toBe(true);

    expect(await reserve(sale.id, 'closer')).toEqual({ kind: 'order_limit_reached', maxOrders: 1 });
  });
});
