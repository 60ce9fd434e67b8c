import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { encodeBuyerRecord, findBuyerReservation, parseBuyerRecord, readAllBuyers, readBuyers, writeNextBuyers } from './buyer-record.ts';
import { saleRef } from './store-ref.ts';

const env = contextPerFile();

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

describe('the buyer record', () => {
  it('is <reservationId>|<quantity>, read back as it was written', () => {
    const reservationId = '12-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d';

    expect(encodeBuyerRecord({ reservationId, quantity: 3 })).toBe(`${reservationId}|3`);
    expect(parseBuyerRecord(`${reservationId}|3`)).toEqual({ reservationId, quantity: 3 });
  });

  it('is read the same whether the reserve script or the rebuild wrote it', async () => {
    const sale = await createLiveSale(env.ctx, { perUserLimit: 2 });
    const reserved = newReservationId(sale.id);
    const rebuilt = newReservationId(sale.id);
    await reservePurchase(
      { redis: env.ctx.redis, prefix: env.ctx.config.REDIS_PREFIX },
      {
        saleId: sale.id,
        userId: 'ann',
        quantity: 2,
        reservationId: reserved,
      },
    );
    await writeNextBuyers(inRedis(sale.id), [{ userId: 'bob', reservationId: rebuilt, quantity: 1 }]);
    // Beside the reserve script's record, as a rebuild's switch would leave it (rebuild-sale-6.lua).
    const keys = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id);
    await env.ctx.redis.hset(keys.buyers, 'bob', (await env.ctx.redis.hget(keys.nextBuyers, 'bob'))!);

    expect(await env.ctx.redis.hget(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).buyers, 'ann')).toMatch(
      new RegExp(`^${reserved}\\|2\\|\\d+$`),
    );
    expect(await findBuyerReservation(inRedis(sale.id), 'ann')).toEqual({
      reservationId: reserved,
      quantity: 2,
    });
    expect(await findBuyerReservation(inRedis(sale.id), 'bob')).toEqual({
      reservationId: rebuilt,
      quantity: 1,
    });
    expect(await findBuyerReservation(inRedis(sale.id), 'cid')).toBeNull();
    expect(await readBuyers(inRedis(sale.id), 10)).toEqual(
      new Map([
        ['ann', reserved],
        ['bob', rebuilt],
      ]),
    );
    expect(await readBuyers(inRedis(sale.id), 1)).toBeNull();
    expect((await readAllBuyers(inRedis(sale.id))).sort((a, b) => a.userId.localeCompare(b.userId))).toEqual([
      { userId: 'ann', reservationId: reserved, quantity: 2 },
      { userId: 'bob', reservationId: rebuilt, quantity: 1 },
    ]);
  });
});
