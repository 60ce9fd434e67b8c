import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { doorGuardsOff, newReservationId, type DoorTerms, type SaleDefinition } from '@flashsale/domain';
import { createTestContext, redisNow, type TestContext } from '../../../test/support/context.ts';
import { admitQueue, joinQueue, readQueuePlace, showUp, type DoorReading } from './door.ts';
import { saleKeys } from './keys.ts';
import { publishSale } from './sale-state.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

let nextId = 910_000_000 + Math.floor(Math.random() * 1_000_000);
const prefix = () => ctx.config.REDIS_PREFIX;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A started queued sale whose turns open with a show-up window of `showUpSeconds` (full turn: 60 s). */
async function windowedSale(stock: number, showUpSeconds: number, buyers: number): Promise<SaleDefinition> {
  const now = await redisNow(ctx.redis);
  const admission: DoorTerms = {
    mode: 'queue',
    preQueueSeconds: 60,
    admitPerSecond: 1000,
    admissionTtlSeconds: 60,
    noShowFactor: 1,
    paused: false,
    ...doorGuardsOff(60),
    showUpSeconds,
  };
  const sale = { id: nextId++, name: 'Show up', stock, perUserLimit: 1, startsAt: now - 1000, endsAt: now + 3_600_000, admission };
  await publishSale(store(), sale, 'gen-1');
  for (let i = 0; i < buyers; i++) await joinQueue(inRedis(sale.id), `buyer-${i}`);
  return sale;
}

const doorOf = (reading: DoorReading) => {
  if (reading.kind !== 'door') throw new Error(`no door: ${reading.kind}`);
  return reading.door;
};

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: ctx.redis, prefix: prefix() });

describe('the show-up window', () => {
  it('a new turn runs its window; a buyer who shows up (the call, or a refused purchase) has the full turn; a no-show loses it, counted, and the next is admitted', async () => {
    const sale = await windowedSale(3, 3, 4);
    const first = doorOf(await admitQueue(inRedis(sale.id)));
    expect(first).toMatchObject({ front: 3, unused: 3, awaitingShowUp: 3, noShowRate: 0, room: 0 });
    const turnOf = async (buyer: string) => (await ctx.redis.zscore(saleKeys(prefix(), sale.id).turns, buyer)) as string;
    // Each turn ends with its window; the full turn's end waits in the show-up set.
    expect(Number(await turnOf('buyer-0'))).toBeLessThanOrEqual(first.now + 3000);

    const shown = await showUp(inRedis(sale.id), 'buyer-0');
    expect(shown).toEqual({ kind: 'shown', turn: expect.any(Number) });
    const full = (shown as { turn: number }).turn;
    expect(full).toBeGreaterThan(first.now + 50_000);
    expect(await showUp(inRedis(sale.id), 'buyer-0')).toEqual({ kind: 'shown', turn: full });
    // A purchase attempt refused (2 units above the limit of 1) is showing up too.
    expect(
      await reservePurchase(store(), {
        saleId: sale.id,
        userId: 'buyer-1',
        quantity: 2,
        reservationId: newReservationId(sale.id),
      }),
    ).toEqual({ kind: 'above_limit', limit: 1 });
    expect(Number(await turnOf('buyer-1'))).toBeGreaterThan(first.now + 50_000);
    // buyer-2 never comes; buyer-3 waits for a place in the bound.
    expect(await readQueuePlace(inRedis(sale.id), 'buyer-3')).toMatchObject({ place: { rank: 3, turn: null } });

    await sleep(3300);
    const after = doorOf(await admitQueue(inRedis(sale.id)));
    // One no-show of three turns (shrunk towards 0 by one buyer who came): 1 / (2 + 1 + 1).
    expect(after).toMatchObject({ front: 4, abandoned: 1, noShowRate: 0.25, awaitingShowUp: 1 });
    expect(await readQueuePlace(inRedis(sale.id), 'buyer-2')).toMatchObject({ place: { rank: 2, turn: 0 } });
    expect(Number(await turnOf('buyer-3'))).toBeGreaterThan(after.now);
    // The buyers who showed up keep their full turn.
    expect(Number(await turnOf('buyer-0'))).toBe(full);
    expect(
      await reservePurchase(store(), {
        saleId: sale.id,
        userId: 'buyer-0',
        quantity: 1,
        reservationId: newReservationId(sale.id),
      }),
    ).toEqual({ kind: 'reserved', remaining: 2 });
  });

  it('with most turns unused, admits ahead of the measured no-show rate, at most ten turns a unit; the stock is never oversold', async () => {
    const sale = await windowedSale(2, 1, 120);
    const keys = saleKeys(prefix(), sale.id);
    const fronts: number[] = [];
    for (let round = 0; round < 5; round++) {
      const door = doorOf(await admitQueue(inRedis(sale.id)));
      fronts.push(door.front);
      // Ten turns a unit at most, whatever the rate measured.
      expect(door.unused).toBeLessThanOrEqual(20);
      expect(door.noShowRate).toBeLessThanOrEqual(0.9);
      await sleep(1200);
    }
    // Every turn so far was a no-show: each window that lapsed sent the door further ahead.
    expect(fronts[0]).toBe(2);
    expect(fronts[1]).toBeGreaterThan(fronts[0]! + 2);
    expect(fronts.at(-1)!).toBeGreaterThan(fronts[1]!);
    const door = doorOf(await admitQueue(inRedis(sale.id)));
    expect(door.noShowRate).toBeGreaterThan(0.8);

    // Everyone holding a turn now tries to buy: the reserve script still sells 2 units, no more.
    const holders = await ctx.redis.zrangebyscore(keys.turns, `(${door.now}`, '+inf');
    expect(holders.length).toBeGreaterThan(2);
    const outcomes = await Promise.all(
      holders.map((userId) => reservePurchase(store(), { saleId: sale.id, userId, quantity: 1, reservationId: newReservationId(sale.id) })),
    );
    expect(outcomes.filter((outcome) => outcome.kind === 'reserved')).toHaveLength(2);
    expect(new Set(outcomes.map((outcome) => outcome.kind))).toEqual(new Set(['reserved', 'sold_out']));
  });
});
