import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { returnUnits } from './stock-return.ts';
import { readSaleState } from './sale-meta.ts';
import { findBuyerReservation } from './buyer-record.ts';
import { snapshotSale, acceptedUnits } from './sale-snapshot.ts';
import { rebuildSaleState } from './sale-rebuild.ts';
import { saleKeys } from './keys.ts';
import type { ScriptedRedis } from './scripts.ts';
import { saleRef } from './store-ref.ts';

const env = contextPerFile();

/** Whether this generation of the sale's Redis state has given back the reservation's units (its returned hash). */
async function wasReturned(redis: ScriptedRedis, prefix: string, saleId: number, reservationId: string): Promise<boolean> {
  return (await redis.hexists(saleKeys(prefix, saleId).returned, reservationId)) === 1;
}

/** A sale of `stock` with `buyers` each holding one unit, as the reserve script leaves it. */
async function saleWithBuyers(stock: number, buyers: number) {
  const { redis, config } = env.ctx;
  const sale = await createLiveSale(env.ctx, { stock });
  const held = [];
  for (let i = 0; i < buyers; i++) {
    const order = { saleId: sale.id, userId: `buyer-${i}`, quantity: 1, reservationId: `${sale.id}-${randomUUID()}` };
    expect((await reservePurchase({ redis, prefix: config.REDIS_PREFIX }, order)).kind).toBe('reserved');
    held.push(order);
  }
  return { sale, held };
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

describe('returnUnits (return-units-4.lua)', () => {
  it('gives each order back once: a repeat gives nothing, and the buyer may buy again', async () => {
    const { redis, config } = env.ctx;
    const { sale, held } = await saleWithBuyers(5, 3);
    const [first, second] = held;

    expect(await returnUnits(inRedis(sale.id), sale.generation, [first!, second!])).toEqual({
      kind: 'applied',
      results: ['returned', 'returned'],
    });
    expect(await returnUnits(inRedis(sale.id), sale.generation, [second!, first!])).toEqual({
      kind: 'applied',
      results: ['already', 'already'],
    });

    expect((await readSaleState(inRedis(sale.id)))!.remaining).toBe(2 + 2);
    expect(await findBuyerReservation(inRedis(sale.id), first!.userId)).toBeNull();
    expect(await findBuyerReservation(inRedis(sale.id), held[2]!.userId)).not.toBeNull();
    expect(await wasReturned(redis, config.REDIS_PREFIX, sale.id, first!.reservationId)).toBe(true);
    const again = { ...first!, reservationId: `${sale.id}-${randomUUID()}` };
    expect((await reservePurchase({ redis, prefix: config.REDIS_PREFIX }, again)).kind).toBe('reserved');
  });

  it('keeps what the state has accepted growing: returned units and freed buyers are counted', async () => {
    const { sale, held } = await saleWithBuyers(5, 3);
    const before = await snapshotSale(inRedis(sale.id));
    await returnUnits(inRedis(sale.id), sale.generation, [held[0]!]);
    const after = await snapshotSale(inRedis(sale.id));

    expect({ buyers: before.buyers, accepted: acceptedUnits(before) }).toEqual({ buyers: 3, accepted: 3 });
    expect({
      buyers: after.buyers,
      accepted: acceptedUnits(after),
      remaining: after.remaining,
      returnedUnits: after.returnedUnits,
    }).toEqual({ buyers: 3, accepted: 3, remaining: 3, returnedUnits: 1 });
  });

  it('leaves a buyer who holds a newer reservation alone', async () => {
    const { sale, held } = await saleWithBuyers(5, 1);
    const old = { ...held[0]!, reservationId: `${sale.id}-${randomUUID()}` };

    expect(await returnUnits(inRedis(sale.id), sale.generation, [old])).toEqual({
      kind: 'applied',
      results: ['returned'],
    });
    expect((await findBuyerReservation(inRedis(sale.id), held[0]!.userId))!.reservationId).toBe(held[0]!.reservationId);
    expect((await snapshotSale(inRedis(sale.id))).buyers).toBe(1);
  });

  it('refuses another generation and a sale Redis does not hold, changing nothing', async () => {
    const { redis, config } = env.ctx;
    const { sale, held } = await saleWithBuyers(5, 2);
    await rebuildSaleState({ redis, prefix: config.REDIS_PREFIX }, sale, {
      remaining: 4,
      generation: 'rebuilt',
      buyers: [{ userId: held[1]!.userId, reservationId: held[1]!.reservationId, quantity: 1 }],
    });

    expect(await returnUnits(inRedis(sale.id), sale.generation, [held[1]!])).toEqual({
      kind: 'other-generation',
      current: 'rebuilt',
    });
    expect(await returnUnits(inRedis(2_000_000_000), 'g', [held[1]!])).toEqual({ kind: 'absent' });
    expect((await readSaleState(inRedis(sale.id)))!.remaining).toBe(4);
  });

  it('forgets what it gave back when the sale is rebuilt (the rebuild counted it), so the new state takes returns of its own', async () => {
    const { redis, config } = env.ctx;
    const { sale, held } = await saleWithBuyers(5, 1);
    await returnUnits(inRedis(sale.id), sale.generation, [held[0]!]);
    await rebuildSaleState({ redis, prefix: config.REDIS_PREFIX }, sale, { remaining: 4, generation: 'g2', buyers: [] });

    expect(await wasReturned(redis, config.REDIS_PREFIX, sale.id, held[0]!.reservationId)).toBe(false);
    expect((await snapshotSale(inRedis(sale.id))).returnedUnits).toBe(0);
  });

  it('never puts remaining above stock', async () => {
    const { sale } = await saleWithBuyers(2, 1);
    const ghost = { reservationId: `${sale.id}-${randomUUID()}`, userId: 'ghost', quantity: 2 };

    expect(await returnUnits(inRedis(sale.id), sale.generation, [ghost])).toEqual({
      kind: 'applied',
      results: ['refused'],
    });
    expect((await readSaleState(inRedis(sale.id)))!.remaining).toBe(1);
  });
});
