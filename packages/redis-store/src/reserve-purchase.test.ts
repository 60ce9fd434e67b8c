import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { newReservationId, ReserveCode } from '@flashsale/domain';
import { createLiveSale, createTestContext, redisNow, type TestContext } from '../../../test/support/context.ts';
import { snapshotSale } from '../../../test/support/sale-snapshot.ts';
import { decodeReservation } from './reservation-stream.ts';
import { reserveCodeOf, reservePurchase, toReserveOutcome, type ReserveOutcome } from './reserve-purchase.ts';
import type { ReserveReply } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { setSalePaused } from './sale-state.ts';
import { applySaleControls } from './sale-controls.ts';
import { saleRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

function reserve(saleId: number, userId: string, quantity = 1, reservationId = newReservationId(saleId)): Promise<ReserveOutcome> {
  return reservePurchase({ redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX }, { saleId, userId, quantity, reservationId });
}

/** Runs a purchase that must be refused, and proves the refusal wrote nothing at all. */
async function expectRefusedWithoutWrites(saleId: number, userId: string, quantity: number, expected: ReserveOutcome): Promise<void> {
  const before = await snapshotSale(ctx, saleId);
  expect(await reserve(saleId, userId, quantity)).toEqual(expected);
  expect(await snapshotSale(ctx, saleId)).toEqual(before);
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

describe('reservePurchase against Redis', () => {
  it('reserves: decrements remaining, records the buyer and enqueues one stream entry r, u, q, t', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });
    const reservationId = newReservationId(sale.id);
    const before = await redisNow(ctx.redis);

    expect(await reserve(sale.id, 'alice', 2, reservationId)).toEqual({ kind: 'reserved', remaining: 8 });

    const after = await redisNow(ctx.redis);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    expect(await ctx.redis.hget(keys.meta, 'remaining')).toBe('8');
    expect(await ctx.redis.hgetall(keys.buyers)).toEqual({ alice: expect.stringMatching(new RegExp(`^${reservationId}\\|2\\|\\d+$`)) });
    const entries = await ctx.redis.xrange(keys.stream, '-', '+');
    expect(entries).toHaveLength(1);
    const [entryId, fields] = entries[0]!;
    expect(fields).toEqual(['r', reservationId, 'u', 'alice', 'q', '2', 't', fields[7], 'g', sale.generation]);
    const reservedAt = Number(fields[7]);
    expect(reservedAt).toBeGreaterThanOrEqual(before);
    expect(reservedAt).toBeLessThanOrEqual(after);
    expect(decodeReservation(sale.id, entryId, fields)).toEqual({
      ok: true,
      reservation: { entryId, reservationId, saleId: sale.id, userId: 'alice', quantity: 2, reservedAt, generation: sale.generation },
    });
  });

  it('sells out exactly: the last unit goes to the third buyer and the fourth is refused as sold out', async () => {
    const sale = await createLiveSale(ctx, { stock: 3 });

    expect(await reserve(sale.id, 'b1')).toEqual({ kind: 'reserved', remaining: 2 });
    expect(await reserve(sale.id, 'b2')).toEqual({ kind: 'reserved', remaining: 1 });
    expect(await reserve(sale.id, 'b3')).toEqual({ kind: 'reserved', remaining: 0 });
    await expectRefusedWithoutWrites(sale.id, 'b4', 1, { kind: 'sold_out' });

    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    expect(await ctx.redis.hget(keys.meta, 'remaining')).toBe('0');
    expect(await ctx.redis.xlen(keys.stream)).toBe(3);
    expect(Object.keys(await ctx.redis.hgetall(keys.buyers)).sort()).toEqual(['b1', 'b2', 'b3']);
  });

  it('refuses a quantity larger than what is left as insufficient stock, naming what is left', async () => {
    const sale = await createLiveSale(ctx, { stock: 3, perUserLimit: 2 });
    expect(await reserve(sale.id, 'first', 2)).toEqual({ kind: 'reserved', remaining: 1 });

    await expectRefusedWithoutWrites(sale.id, 'second', 2, { kind: 'insufficient_stock', remaining: 1 });
  });

  it('rejects a second purchase by the same buyer with the first reservation id and quantity', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
    const first = newReservationId(sale.id);
    expect(await reserve(sale.id, 'carol', 2, first)).toEqual({ kind: 'reserved', remaining: 8 });

    await expectRefusedWithoutWrites(sale.id, 'carol', 1, { kind: 'already_purchased', reservationId: first, quantity: 2 });
  });

  it('refuses a quantity above the per-user limit, naming the limit', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });

    await expectRefusedWithoutWrites(sale.id, 'dave', 3, { kind: 'above_limit', limit: 2 });
  });

  it('refuses a purchase before the start as not started', async () => {
    const sale = await createLiveSale(ctx, { startsIn: 60_000 });

    await expectRefusedWithoutWrites(sale.id, 'erin', 1, { kind: 'sale_not_started' });
  });

  it('accepts a purchase from the start instant on: the start is inclusive', async () => {
    const sale = await createLiveSale(ctx, { stock: 5, startsIn: 0 });

    expect(await reserve(sale.id, 'frank')).toEqual({ kind: 'reserved', remaining: 4 });
    const [[, fields]] = (await ctx.redis.xrange(saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream, '-', '+')) as [[string, string[]]];
    expect(Number(fields[7])).toBeGreaterThanOrEqual(sale.startsAt);
  });

  it('refuses a purchase at the end instant as ended: the end is exclusive', async () => {
    const sale = await createLiveSale(ctx, { startsIn: -60_000, endsIn: 0 });

    await expectRefusedWithoutWrites(sale.id, 'grace', 1, { kind: 'sale_ended' });
  });

  it('refuses a purchase for a sale Redis does not hold as not found, creating no key', async () => {
    await expectRefusedWithoutWrites(987_654_321, 'heidi', 1, { kind: 'sale_not_found' });
  });

  it('refuses every purchase while the sale is paused and accepts again once resumed', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    expect(await setSalePaused(inRedis(sale.id), true)).toBe(true);

    await expectRefusedWithoutWrites(sale.id, 'ivan', 1, { kind: 'sale_paused' });

    expect(await setSalePaused(inRedis(sale.id), false)).toBe(true);
    expect(await reserve(sale.id, 'ivan')).toEqual({ kind: 'reserved', remaining: 4 });
  });

  it('refuses an ended sale as ended even while it is paused', async () => {
    const sale = await createLiveSale(ctx, { startsIn: -60_000, endsIn: 0 });
    await setSalePaused(inRedis(sale.id), true);

    await expectRefusedWithoutWrites(sale.id, 'judy', 1, { kind: 'sale_ended' });
  });

  it('tells a buyer who holds a reservation so, with its id, after the sale sold out, while paused and after its end', async () => {
    const sale = await createLiveSale(ctx, { stock: 1 });
    const reservationId = newReservationId(sale.id);
    expect(await reserve(sale.id, 'kim', 1, reservationId)).toEqual({ kind: 'reserved', remaining: 0 });
    const holder: ReserveOutcome = { kind: 'already_purchased', reservationId, quantity: 1 };

    await expectRefusedWithoutWrites(sale.id, 'kim', 1, holder);
    await setSalePaused(inRedis(sale.id), true);
    await expectRefusedWithoutWrites(sale.id, 'kim', 1, holder);
    const closed = { version: 1, stock: 1, endsAt: (await redisNow(ctx.redis)) - 1, operatorPaused: false };
    expect(await applySaleControls(inRedis(sale.id), closed)).toBe('applied');
    await expectRefusedWithoutWrites(sale.id, 'kim', 1, holder);
    // Anyone else still gets the sale's own answer.
    await expectRefusedWithoutWrites(sale.id, 'lea', 1, { kind: 'sale_ended' });
  });

  it('fails with no effect at all when the stream key holds another type: no stock taken, no buyer recorded', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await ctx.redis.del(keys.stream);
    await ctx.redis.set(keys.stream, 'not a stream');

    await expect(reserve(sale.id, 'ann')).rejects.toThrow(/WRONGTYPE/);

    expect(await ctx.redis.hget(keys.meta, 'remaining')).toBe('5');
    expect(await ctx.redis.hgetall(keys.buyers)).toEqual({});
  });

  it('takes exactly the stock when many buyers race for it', async () => {
    const sale = await createLiveSale(ctx, { stock: 7 });

    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => reserve(sale.id, `racer-${i}`)));

    expect(outcomes.filter((o) => o.kind === 'reserved')).toHaveLength(7);
    expect(outcomes.filter((o) => o.kind === 'sold_out')).toHaveLength(33);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    expect(await ctx.redis.hget(keys.meta, 'remaining')).toBe('0');
    expect(await ctx.redis.xlen(keys.stream)).toBe(7);
    expect(await ctx.redis.hlen(keys.buyers)).toBe(7);
  });
});

describe('toReserveOutcome', () => {
  it.each<[ReserveReply, ReserveOutcome]>([
    [41, { kind: 'reserved', remaining: 41 }],
    [0, { kind: 'reserved', remaining: 0 }],
    [[-1, ''], { kind: 'sale_not_found' }],
    [[-2, ''], { kind: 'sale_ended' }],
    [[-3, ''], { kind: 'sale_paused' }],
    [[-4, ''], { kind: 'sale_not_started' }],
    [[-5, 3], { kind: 'above_limit', limit: 3 }],
    [
      [-6, '12-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d|2'],
      { kind: 'already_purchased', reservationId: '12-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d', quantity: 2 },
    ],
    [[-7, ''], { kind: 'sold_out' }],
    [[-8, 1], { kind: 'insufficient_stock', remaining: 1 }],
    [[-10, 2500], { kind: 'rebuy_cooldown', waitMs: 2500 }],
    [[-11, 3], { kind: 'order_limit_reached', maxOrders: 3 }],
  ])('maps the script reply %j to %j', (reply, outcome) => {
    expect(toReserveOutcome(reply)).toEqual(outcome);
  });

  it('has a ReserveCode for each refusal the script names in its header, and Reserved for its bare integer', () => {
    const header = readFileSync(new URL('./lua/reserve.lua', import.meta.url), 'utf8').split(']]')[0]!;
    const codes = [...header.matchAll(/^ +\{ (-?\d+), /gm)].map((match) => Number(match[1]));

    expect([ReserveCode.Reserved, ...codes]).toEqual(Object.values(ReserveCode).filter((code) => typeof code === 'number'));
    expect(reserveCodeOf(7)).toBe(ReserveCode.Reserved);
    expect(reserveCodeOf([-7, ''])).toBe(ReserveCode.SoldOut);
  });

  it('throws on a code the script does not define, the pair of Reserved included (the script answers it bare)', () => {
    expect(() => toReserveOutcome([-13, ''])).toThrow(new Error('reserve script returned an unknown code -13'));
    expect(() => toReserveOutcome([-12, 6])).toThrow(new Error('reserve script needs 6 keys for this sale: reservePurchase passes them'));
    expect(() => toReserveOutcome([0, ''])).toThrow(new Error('reserve script returned an unknown code 0'));
    expect(() => toReserveOutcome([1, 41])).toThrow(new Error('reserve script returned an unknown code 1'));
  });
});
