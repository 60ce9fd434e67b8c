import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { deadLetter, deadLetteredUnitsField, findDeadLetter, readDeadLettered } from './dead-letters.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

type Entry = [id: string, fields: string[]];

/** One worker taking every entry of the sale's stream, as the order writers do. */
async function deliverAll(saleId: number): Promise<Entry[]> {
  const reply = (await ctx.redis.xreadgroup(
    'GROUP',
    ORDER_WRITERS_GROUP,
    'test-consumer',
    'STREAMS',
    saleKeys(ctx.config.REDIS_PREFIX, saleId).stream,
    '>',
  )) as [string, Entry[]][] | null;
  return reply?.[0]?.[1] ?? [];
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX });

describe('the dead-letter script (dead-letter-4.lua)', () => {
  it('moves the entry to the dead-letter stream, acknowledges it and records the rejection under the reservation id, in one step', async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 3 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const reservationId = newReservationId(sale.id);
    // A buyer id with what JSON must escape, and characters beyond ASCII, comes back unchanged.
    const userId = 'ann|"x"/\\\u00e9\u{1F600}';
    expect((await reservePurchase(store(), { saleId: sale.id, userId, quantity: 3, reservationId })).kind).toBe('reserved');
    const [[entryId, fields]] = (await deliverAll(sale.id)) as [Entry];

    await deadLetter(inRedis(sale.id), { id: entryId, fields }, 'OVER_STOCK', 2);

    const [[, deadFields]] = (await ctx.redis.xrange(keys.deadLetter, '-', '+')) as [Entry];
    expect(deadFields).toEqual(['id', entryId, 'reason', 'OVER_STOCK', 'deliveries', '2', ...fields]);
    expect(((await ctx.redis.xpending(keys.stream, ORDER_WRITERS_GROUP)) as [number])[0]).toBe(0);
    expect(JSON.parse((await ctx.redis.hget(keys.rejected, reservationId))!)).toEqual({ u: userId, q: '3', reason: 'OVER_STOCK' });
    expect(await findDeadLetter(inRedis(sale.id), reservationId)).toEqual({
      reservationId,
      userId,
      quantity: 3,
      reason: 'OVER_STOCK',
    });
  });

  it("adds a reservation's units to its generation's count the first time it is set aside, and nothing for an entry that took no stock", async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 3 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    expect(
      (
        await reservePurchase(store(), {
          saleId: sale.id,
          userId: 'ann',
          quantity: 3,
          reservationId: newReservationId(sale.id),
        })
      ).kind,
    ).toBe('reserved');
    expect(
      (
        await reservePurchase(store(), {
          saleId: sale.id,
          userId: 'bob',
          quantity: 2,
          reservationId: newReservationId(sale.id),
        })
      ).kind,
    ).toBe('reserved');
    // Entries a reserve script never writes: of an older generation, with a quantity of 0, without a time,
    // over the per-user limit, and a well-formed one whose buyer holds no reservation.
    await ctx.redis.xadd(keys.stream, '*', 'r', newReservationId(sale.id), 'u', 'old', 'q', '4', 't', '1', 'g', 'an-older-generation');
    await ctx.redis.xadd(keys.stream, '*', 'r', newReservationId(sale.id), 'u', 'cy', 'q', '0', 't', '1', 'g', sale.generation);
    await ctx.redis.xadd(keys.stream, '*', 'r', newReservationId(sale.id), 'u', 'dee', 'q', '1', 'g', sale.generation);
    await ctx.redis.xadd(keys.stream, '*', 'r', newReservationId(sale.id), 'u', 'eve', 'q', '5', 't', '1', 'g', sale.generation);
    await ctx.redis.xadd(keys.stream, '*', 'r', newReservationId(sale.id), 'u', 'fay', 'q', '1', 't', '1', 'g', sale.generation);
    const [ann, bob, ...others] = await deliverAll(sale.id);
    const setAside = ([entryId, fields]: Entry) => deadLetter(inRedis(sale.id), { id: entryId, fields }, 'OVER_STOCK', 1);

    // Ann's entry twice (two workers held it): her 3 units count once.
    for (const entry of [ann!, bob!, ann!, ...others]) await setAside(entry);

    expect(await ctx.redis.xlen(keys.deadLetter)).toBe(8);
    expect(await ctx.redis.hget(keys.rejected, deadLetteredUnitsField(sale.generation))).toBe('5');
    expect(await ctx.redis.hget(keys.rejected, deadLetteredUnitsField('an-older-generation'))).toBeNull();
  });

  it("counts nothing for an entry whose reservation is not the one its buyer's record holds: the reserve script never took its units", async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 3 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    expect(
      (
        await reservePurchase(store(), {
          saleId: sale.id,
          userId: 'ann',
          quantity: 2,
          reservationId: newReservationId(sale.id),
        })
      ).kind,
    ).toBe('reserved');
    // A second entry for Ann under another id, and one with her id but another quantity, written by hand.
    const [[, annFields]] = (await ctx.redis.xrange(keys.stream, '-', '+')) as [Entry];
    await ctx.redis.xadd(keys.stream, '*', 'r', newReservationId(sale.id), 'u', 'ann', 'q', '2', 't', '1', 'g', sale.generation);
    await ctx.redis.xadd(keys.stream, '*', 'r', annFields[1]!, 'u', 'ann', 'q', '3', 't', '1', 'g', sale.generation);
    const [, ...forged] = await deliverAll(sale.id);

    for (const [entryId, fields] of forged) {
      await deadLetter(inRedis(sale.id), { id: entryId, fields }, 'OVER_USER_LIMIT', 1);
    }

    expect(await ctx.redis.xlen(keys.deadLetter)).toBe(2);
    expect(await ctx.redis.hget(keys.rejected, deadLetteredUnitsField(sale.generation))).toBeNull();
  });

  it('records nothing to look up for a malformed entry without a reservation id, but still dead-letters it', async () => {
    const sale = await createLiveSale(ctx);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await ctx.redis.xadd(keys.stream, '*', 'u', 'ann', 'q', '1');
    const [[entryId, fields]] = (await deliverAll(sale.id)) as [Entry];

    await deadLetter(inRedis(sale.id), { id: entryId, fields }, 'MALFORMED_ENTRY', 1);

    expect(await ctx.redis.xlen(keys.deadLetter)).toBe(1);
    expect(await ctx.redis.exists(keys.rejected)).toBe(0);
  });

  it.each(['deadLetter', 'rejected'] as const)(
    'fails with nothing written when the %s key holds another type: the entry stays pending',
    async (poisoned) => {
      const sale = await createLiveSale(ctx);
      const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
      expect(
        (
          await reservePurchase(store(), {
            saleId: sale.id,
            userId: 'ann',
            quantity: 1,
            reservationId: newReservationId(sale.id),
          })
        ).kind,
      ).toBe('reserved');
      const [[entryId, fields]] = (await deliverAll(sale.id)) as [Entry];
      await ctx.redis.set(keys[poisoned], 'oops');

      await expect(deadLetter(inRedis(sale.id), { id: entryId, fields }, 'OVER_STOCK', 1)).rejects.toThrow(/WRONGTYPE/);

      expect(((await ctx.redis.xpending(keys.stream, ORDER_WRITERS_GROUP)) as [number])[0]).toBe(1);
      expect(await ctx.redis.get(keys[poisoned])).toBe('oops');
      const other = poisoned === 'deadLetter' ? keys.rejected : keys.deadLetter;
      expect(await ctx.redis.exists(other)).toBe(0);
    },
  );

  it('keeps every key of a sale in its hash tag, so the script runs on Redis Cluster', () => {
    const keys = saleKeys('fs', 42);

    expect(Object.values(keys).map((key) => /\{([^}]*)\}/.exec(key)?.[1])).toEqual(Object.values(keys).map(() => 's42'));
    expect(keys.rejected).toBe('fs:{s42}:rejected');
  });
});

describe('readDeadLettered', () => {
  it('reads every dead letter of the generation its buyer holds, up to the entry it is given, page after page, each reservation once', async () => {
    const sale = await createLiveSale(ctx);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    // Dead-letter entries as the script writes them, more than one page of them, written here directly.
    const entry = (reservationId: string, quantity: number, generation = sale.generation) => [
      'id',
      '1-0',
      'reason',
      'OVER_STOCK',
      'deliveries',
      '1',
      'r',
      reservationId,
      'u',
      reservationId,
      'q',
      String(quantity),
      't',
      '1',
      'g',
      generation,
    ];
    const expected = new Map<string, number>();
    const writing = ctx.redis.pipeline();
    for (let i = 0; i < 2_500; i++) {
      const reservationId = newReservationId(sale.id);
      expected.set(reservationId, 1 + (i % 3));
      writing.xadd(keys.deadLetter, '*', ...entry(reservationId, 1 + (i % 3)));
      // Each buyer (named by the reservation) holds it, as the reserve script records it.
      writing.hset(keys.buyers, reservationId, `${reservationId}|${1 + (i % 3)}`);
    }
    const [first] = [...expected.keys()];
    writing.xadd(keys.deadLetter, '*', ...entry(first!, 1));
    writing.xadd(keys.deadLetter, '*', ...entry(newReservationId(sale.id), 4, 'an-older-generation'));
    // Set aside, but never taken by the reserve script: its buyer holds no reservation.
    writing.xadd(keys.deadLetter, '*', ...entry(newReservationId(sale.id), 5));
    writing.xadd(keys.deadLetter, '*', 'id', '1-0', 'reason', 'MALFORMED_ENTRY', 'deliveries', '1', 'u', 'nobody');
    await writing.exec();
    const [[upTo]] = (await ctx.redis.xrevrange(keys.deadLetter, '+', '-', 'COUNT', 1)) as [Entry];
    await ctx.redis.xadd(keys.deadLetter, '*', ...entry(newReservationId(sale.id), 2));

    const read = await readDeadLettered(inRedis(sale.id), { generation: sale.generation, upTo });

    expect(read).toEqual(new Map([...expected, [first!, 1]]));
    expect(await readDeadLettered(inRedis(sale.id), { generation: sale.generation, upTo: null })).toEqual(new Map());
  });
});

describe('findDeadLetter', () => {
  it('finds nothing for a reservation that was never set aside', async () => {
    const sale = await createLiveSale(ctx);

    expect(await findDeadLetter(inRedis(sale.id), newReservationId(sale.id))).toBeNull();
  });
});
