import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, isolatedContextOnOwnRedis } from '../../../test/support/context.ts';
import { redisWorkOf } from '../../../test/support/command-stats.ts';
import { saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { readSaleState } from './sale-meta.ts';
import { rebuildSaleState } from './sale-rebuild.ts';
import type { BuyerRecord } from './buyer-record.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

// A redis-server of the test's own: its command counts (INFO commandstats) are this test's work only.
const own = isolatedContextOnOwnRedis();

function buyersOf(saleId: number, from: number, count: number): BuyerRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    userId: `u${from + i}`,
    reservationId: newReservationId(saleId),
    quantity: 1,
    reservedAt: 1_700_000_000_000 + i,
  }));
}

async function* pagesOf(pages: BuyerRecord[][], dieAfter = Infinity): AsyncGenerator<BuyerRecord[]> {
  for (const [i, page] of pages.entries()) {
    if (i >= dieAfter) throw new Error('the reconciler died mid-rebuild');
    yield page;
  }
}

/** A live sale whose state holds three buyers, as the reserve script left them. */
async function saleWithThreeBuyers() {
  const sale = await createLiveSale(own.ctx, { stock: 10_000 });
  for (const userId of ['old-1', 'old-2', 'old-3']) {
    expect(
      (
        await reservePurchase(store(), {
          saleId: sale.id,
          userId,
          quantity: 1,
          reservationId: newReservationId(sale.id),
        })
      ).kind,
    ).toBe('reserved');
  }
  return { sale, keys: saleKeys(own.ctx.config.REDIS_PREFIX, sale.id) };
}

const terms = (sale: Awaited<ReturnType<typeof createLiveSale>>) => ({ ...sale, operatorPaused: false, controlsVersion: 0 });

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(own.ctx.redis, own.ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: own.ctx.redis, prefix: own.ctx.config.REDIS_PREFIX });

describe('rebuildSaleState (rebuild-sale-6.lua)', () => {
  it('writes the buyers aside a thousand per HSET, page by page, then switches them in with one script; the old hash goes with UNLINK', async () => {
    const { sale, keys } = await saleWithThreeBuyers();
    const pages = [buyersOf(sale.id, 0, 2_500), buyersOf(sale.id, 2_500, 2_500)];

    const work = await redisWorkOf(own.server.url, () =>
      rebuildSaleState(store(), terms(sale), {
        remaining: 5_000,
        generation: 'gen-2',
        buyers: pagesOf(pages),
      }),
    );

    // 2 pages of 2,500: 1,000 + 1,000 + 500 each, and the script's two HSETs of the meta (its fields, then
    // its packed terms). No DEL: Redis frees the old hash in the background.
    expect(work.commands).toMatchObject({ hset: 8, rename: 1, persist: 1 });
    expect(work.commands.del).toBeUndefined();
    expect(work.commands.unlink).toBeGreaterThanOrEqual(2);
    expect(await own.ctx.redis.hlen(keys.buyers)).toBe(5_000);
    expect(await own.ctx.redis.hexists(keys.buyers, 'old-1')).toBe(0);
    expect(await own.ctx.redis.hget(keys.buyers, 'u4999')).toBe(`${pages[1]![2_499]!.reservationId}|1|${pages[1]![2_499]!.reservedAt}`);
    expect(await own.ctx.redis.pttl(keys.buyers)).toBe(-1);
    expect(await own.ctx.redis.exists(keys.nextBuyers)).toBe(0);
    expect(await readSaleState(inRedis(sale.id))).toMatchObject({
      remaining: 5_000,
      paused: true,
      generation: 'gen-2',
    });
  });

  it('a rebuild that dies part way leaves the old state whole and its buyers aside expiring; the next attempt starts anew', async () => {
    const { sale, keys } = await saleWithThreeBuyers();
    const before = await own.ctx.redis.hgetall(keys.buyers);

    const dying = rebuildSaleState(store(), terms(sale), {
      remaining: 1,
      generation: 'gen-dead',
      buyers: pagesOf([buyersOf(sale.id, 0, 1_500), buyersOf(sale.id, 1_500, 10)], 1),
    });
    await expect(dying).rejects.toThrow('died mid-rebuild');

    expect(await own.ctx.redis.hgetall(keys.buyers)).toEqual(before);
    expect(await readSaleState(inRedis(sale.id))).toMatchObject({ generation: sale.generation });
    expect(await own.ctx.redis.hlen(keys.nextBuyers)).toBe(1_500);
    expect(await own.ctx.redis.pttl(keys.nextBuyers)).toBeGreaterThan(0);

    const again = buyersOf(sale.id, 9_000, 2);
    await rebuildSaleState(store(), terms(sale), {
      remaining: 9_998,
      generation: 'gen-3',
      buyers: pagesOf([again]),
    });

    expect(Object.keys(await own.ctx.redis.hgetall(keys.buyers)).sort()).toEqual(['u9000', 'u9001']);
    expect(await own.ctx.redis.exists(keys.nextBuyers)).toBe(0);
    expect(await readSaleState(inRedis(sale.id))).toMatchObject({
      remaining: 9_998,
      generation: 'gen-3',
    });
  });

  it('a sale without buyers is switched to an empty buyers hash', async () => {
    const { sale, keys } = await saleWithThreeBuyers();

    await rebuildSaleState(store(), terms(sale), {
      remaining: 10_000,
      generation: 'gen-empty',
      buyers: [],
    });

    expect(await own.ctx.redis.exists(keys.buyers, keys.nextBuyers)).toBe(0);
    expect(await readSaleState(inRedis(sale.id))).toMatchObject({
      remaining: 10_000,
      generation: 'gen-empty',
    });
  });
});
