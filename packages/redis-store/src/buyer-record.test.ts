import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { encodeBuyerRecord, findBuyerReservation, parseBuyerRecord, readAllBuyers, readBuyers, writeBuyers } from './buyer-record.ts';

const env = contextPerFile();

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
    await reservePurchase(env.ctx.redis, env.ctx.config.REDIS_PREFIX, { saleId: sale.id, userId: 'ann', quantity: 2, reservationId: reserved });
    await writeBuyers(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, [{ userId: 'bob', reservationId: rebuilt, quantity: 1 }]);

    expect(await env.ctx.redis.hget(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).buyers, 'ann')).toMatch(new RegExp(`^${reserved}\\|2\\|\\d+$`));
    expect(await findBuyerReservation(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, 'ann')).toEqual({ reservationId: reserved, quantity: 2 });
    expect(await findBuyerReservation(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, 'bob')).toEqual({ reservationId: rebuilt, quantity: 1 });
    expect(await findBuyerReservation(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, 'cid')).toBeNull();
    expect(await readBuyers(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, 10)).toEqual(new Map([['ann', reserved], ['bob', rebuilt]]));
    expect(await readBuyers(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, 1)).toBeNull();
    expect((await readAllBuyers(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id)).sort((a, b) => a.userId.localeCompare(b.userId))).toEqual([
      { userId: 'ann', reservationId: reserved, quantity: 2 },
      { userId: 'bob', reservationId: rebuilt, quantity: 1 },
    ]);
  });

  it('is written a thousand buyers per command, every one of them', async () => {
    const sale = await createLiveSale(env.ctx);
    const buyers = Array.from({ length: 2_500 }, (_, i) => ({ userId: `u${i}`, reservationId: newReservationId(sale.id), quantity: 1 }));

    await writeBuyers(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, buyers);

    expect(await env.ctx.redis.hlen(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).buyers)).toBe(2_500);
    expect(await findBuyerReservation(env.ctx.redis, env.ctx.config.REDIS_PREFIX, sale.id, 'u2499')).toEqual({ reservationId: buyers[2_499]!.reservationId, quantity: 1 });
  });
});
