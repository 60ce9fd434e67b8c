import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { saleKeys } from './keys.ts';
import { reserveArgs, reservePurchase } from './reserve-purchase.ts';
import { readNewEntries } from './reservation-stream.ts';
import { deadLetter, readDeadLettered } from './dead-letters.ts';
import { setSalePaused } from './sale-state.ts';
import { AUDIT_MAX_IN_FLIGHT, readRedisLedger } from './redis-ledger.ts';
import type { ScriptCommands } from './scripts.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

const env = contextPerFile();

const prefix = () => env.ctx.config.REDIS_PREFIX;

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: env.ctx.redis, prefix: prefix() });

describe('readRedisLedger', () => {
  it('counts the units undelivered, pending and dead-lettered by reservation, of the current generation only', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 20, perUserLimit: 3 });
    const ids: string[] = [];
    for (const [userId, quantity] of [
      ['a', 3],
      ['b', 2],
      ['c', 1],
    ] as const) {
      const reservationId = newReservationId(sale.id);
      await reservePurchase(store(), { saleId: sale.id, userId, quantity, reservationId });
      ids.push(reservationId);
    }
    // a and b delivered (pending); a set aside; c undelivered; one entry of an older Redis state.
    const [a] = (await readNewEntries(store(), 'consumer-1', [sale.id], 2)).entries.get(sale.id)!;
    await deadLetter(inRedis(sale.id), a!, 'OVER_STOCK', 1);
    await env.ctx.redis.xadd(
      saleKeys(prefix(), sale.id).stream,
      '*',
      'r',
      newReservationId(sale.id),
      'u',
      'old',
      'q',
      '1',
      't',
      '1',
      'g',
      'an-old-generation',
    );

    const ledger = await readRedisLedger(inRedis(sale.id));

    expect(ledger).toEqual({
      at: expect.any(Number),
      stock: 20,
      remaining: 14,
      generation: sale.generation,
      returnedUnits: 0,
      inFlight: new Map([
        [ids[2], 1],
        [ids[1], 2],
      ]),
      deadLetteredUnits: 3,
      lastDeadLetterId: expect.any(String),
    });
    expect(await readDeadLettered(inRedis(sale.id), { generation: sale.generation, upTo: ledger!.lastDeadLetterId })).toEqual(
      new Map([[ids[0], 3]]),
    );
  });

  it('reads the dead-lettered units of the generation from the kept count, not from the dead letters', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 20, perUserLimit: 3 });
    const keys = saleKeys(prefix(), sale.id);
    await reservePurchase(store(), { saleId: sale.id, userId: 'a', quantity: 2, reservationId: newReservationId(sale.id) });
    const [a] = (await readNewEntries(store(), 'consumer-1', [sale.id], 1)).entries.get(sale.id)!;
    await deadLetter(inRedis(sale.id), a!, 'OVER_STOCK', 1);
    await env.ctx.redis.hincrby(keys.rejected, `units:${sale.generation}`, 5);

    expect(await readRedisLedger(inRedis(sale.id))).toMatchObject({ deadLetteredUnits: 7, inFlight: new Map() });
  });

  it('is null for a paused sale and for one Redis does not hold', async () => {
    const sale = await createLiveSale(env.ctx);
    await setSalePaused(inRedis(sale.id), true);

    expect(await readRedisLedger(inRedis(sale.id))).toBeNull();
    expect(await readRedisLedger(inRedis(987_654_319))).toBeNull();
  });

  it('reads no backlog of more than AUDIT_MAX_IN_FLIGHT entries in flight (null: audited once the workers caught up)', async () => {
    const sale = await createLiveSale(env.ctx, { stock: AUDIT_MAX_IN_FLIGHT + 10 });
    const reserveAll = async (from: number, count: number) => {
      const pipeline = env.ctx.redis.pipeline();
      const keys = saleKeys(prefix(), sale.id);
      for (let i = from; i < from + count; i++)
        void (pipeline as unknown as ScriptCommands).reserve(...reserveArgs(keys, `buyer-${i}`, 1, newReservationId(sale.id)));
      await pipeline.exec();
    };
    await reserveAll(0, AUDIT_MAX_IN_FLIGHT);
    expect((await readRedisLedger(inRedis(sale.id)))?.inFlight.size).toBe(AUDIT_MAX_IN_FLIGHT);
    await reserveAll(AUDIT_MAX_IN_FLIGHT, 1);
    expect(await readRedisLedger(inRedis(sale.id))).toBeNull();
  });
});
