import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARRIVAL_SCORE_BASE, newReservationId, ReserveCode, type DoorTerms, type SaleDefinition, doorGuardsOff } from '@flashsale/domain';
import { createTestContext, redisNow, type TestContext } from '../../../test/support/context.ts';
import { admitQueue, joinQueue, readQueuePlace, recordPaid } from './door.ts';
import { saleKeys } from './keys.ts';
import { publishSale } from './sale-state.ts';
import { rebuildSaleState } from './sale-rebuild.ts';
import { reserveArgs, reservePurchase } from './reserve-purchase.ts';
import { readSaleState } from './sale-meta.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

let nextId = 900_000_000 + Math.floor(Math.random() * 1_000_000);
const ADMISSION: DoorTerms = {
  mode: 'queue',
  preQueueSeconds: 60,
  admitPerSecond: 1000,
  admissionTtlSeconds: 60,
  noShowFactor: 1,
  paused: false,
  ...doorGuardsOff(60),
};

async function queuedSale(startsIn: number, stock = 3): Promise<SaleDefinition> {
  const now = await redisNow(ctx.redis);
  const sale = {
    id: nextId++,
    name: 'Door',
    stock,
    perUserLimit: 1,
    startsAt: now + startsIn,
    endsAt: now + 3_600_000,
    admission: ADMISSION,
  };
  await publishSale(store(), sale, 'gen-1');
  return sale;
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX });

describe('the door in Redis', () => {
  it('joins once per buyer: the draw before the start, arrival numbers after, ranks by score', async () => {
    const sale = await queuedSale(300);
    expect(await joinQueue(inRedis(sale.id), 'early', 123)).toEqual({
      kind: 'joined',
      place: { score: 123, rank: null },
      isNew: true,
    });
    expect(await joinQueue(inRedis(sale.id), 'early', 999)).toEqual({
      kind: 'joined',
      place: { score: 123, rank: null },
      isNew: false,
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await joinQueue(inRedis(sale.id), 'late', 5)).toEqual({
      kind: 'joined',
      place: { score: ARRIVAL_SCORE_BASE + 1, rank: 1 },
      isNew: true,
    });
    expect(await joinQueue(inRedis(sale.id), 'later', 5)).toEqual({
      kind: 'joined',
      place: { score: ARRIVAL_SCORE_BASE + 2, rank: 2 },
      isNew: true,
    });
    expect(await readQueuePlace(inRedis(sale.id), 'early')).toMatchObject({
      kind: 'place',
      place: { score: 123, rank: 0 },
    });
  });

  it('a solved challenge joins once: a second new joiner with it is solution_replayed, nothing written; expired ones are forgotten', async () => {
    const sale = await queuedSale(60_000);
    const prefix = ctx.config.REDIS_PREFIX;
    const now = await redisNow(ctx.redis);
    const solution = { id: 'sig-1', expiresAt: now + 60_000 };
    expect(await joinQueue(inRedis(sale.id), 'solver', 1, undefined, solution)).toMatchObject({
      kind: 'joined',
      isNew: true,
    });
    // The same buyer again: their place, whatever they send.
    expect(await joinQueue(inRedis(sale.id), 'solver', 2, undefined, solution)).toMatchObject({
      kind: 'joined',
      isNew: false,
    });
    expect(await joinQueue(inRedis(sale.id), 'copier', 3, undefined, solution)).toEqual({ kind: 'solution_replayed' });
    expect(await ctx.redis.zscore(saleKeys(prefix, sale.id).queue, 'copier')).toBeNull();
    await joinQueue(inRedis(sale.id), 'stale', 4, undefined, { id: 'sig-old', expiresAt: now - 1 });
    await joinQueue(inRedis(sale.id), 'fresh', 5, undefined, { id: 'sig-2', expiresAt: now + 60_000 });
    expect((await ctx.redis.zrange(saleKeys(prefix, sale.id).pow, 0, -1)).sort()).toEqual(['sig-1', 'sig-2']);
  });

  it('a cap on the queue refuses new joiners past it (queue_full), never a buyer it holds nor one a ticket brings back', async () => {
    const sale = await queuedSale(60_000);
    const prefix = ctx.config.REDIS_PREFIX;
    await ctx.redis.hset(saleKeys(prefix, sale.id).meta, 'q_max', '2');
    for (const buyer of ['one', 'two']) expect(await joinQueue(inRedis(sale.id), buyer)).toMatchObject({ kind: 'joined' });
    expect(await joinQueue(inRedis(sale.id), 'three')).toEqual({ kind: 'queue_full', cap: 2 });
    expect(await joinQueue(inRedis(sale.id), 'one')).toMatchObject({ kind: 'joined', isNew: false });
    expect(await joinQueue(inRedis(sale.id), 'back', 1, 77)).toMatchObject({ kind: 'joined', isNew: true });
  });

  it('a call given fewer than 6 keys for a sale behind the door is asked for them before anything is read or written beyond its terms', async () => {
    const sale = await queuedSale(-1000);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const state = async () => [
      await ctx.redis.hgetall(keys.meta),
      await ctx.redis.hlen(keys.buyers),
      await ctx.redis.xlen(keys.stream),
      await ctx.redis.zrange(keys.turns, 0, -1, 'WITHSCORES'),
      await ctx.redis.zrange(keys.showUp, 0, -1, 'WITHSCORES'),
    ];
    const before = await state();
    for (const numberOfKeys of [3, 4] as const)
      expect(await ctx.redis.reserve(...reserveArgs(keys, 'ann', 1, newReservationId(sale.id), numberOfKeys))).toEqual([
        ReserveCode.NeedsKeys,
        6,
      ]);
    expect(await state()).toEqual(before);
    // Given them, the door answers.
    expect(
      await reservePurchase(store(), { saleId: sale.id, userId: 'ann', quantity: 1, reservationId: newReservationId(sale.id) }),
    ).toEqual({
      kind: 'not_admitted',
    });
  });

  it('admits at most floor(remaining x factor) unused turns; a purchase uses a turn (once), an open sale ignores the door', async () => {
    const sale = await queuedSale(-1000, 2);
    for (const buyer of ['a', 'b', 'c', 'd']) await joinQueue(inRedis(sale.id), buyer);
    const read = await admitQueue(inRedis(sale.id));
    expect(read).toMatchObject({ kind: 'door', door: { front: 2, queued: 4, unused: 2, remaining: 2 } });
    const [first] = await ctx.redis.zrange(saleKeys(ctx.config.REDIS_PREFIX, sale.id).queue, 0, 0);
    expect(
      await reservePurchase(store(), {
        saleId: sale.id,
        userId: first!,
        quantity: 1,
        reservationId: newReservationId(sale.id),
      }),
    ).toEqual({ kind: 'reserved', remaining: 1 });
    // One unit left and one unused turn: the bound is met, nobody more.
    expect(await admitQueue(inRedis(sale.id))).toMatchObject({
      door: { front: 2, unused: 1, remaining: 1, mayComeBack: 1 },
    });

    const open = { id: nextId++, name: 'Open', stock: 1, perUserLimit: 1, startsAt: sale.startsAt, endsAt: sale.endsAt };
    await publishSale(store(), open, 'gen-1');
    expect(await admitQueue(inRedis(open.id))).toEqual({ kind: 'sale_not_queued' });
    expect(
      await reservePurchase(store(), {
        saleId: open.id,
        userId: 'anyone',
        quantity: 1,
        reservationId: newReservationId(open.id),
      }),
    ).toEqual({ kind: 'reserved', remaining: 0 });
  });

  it("admits at the rate on Redis's clock, however often it is asked: never ahead of rate x time since the start", async () => {
    const sale = await queuedSale(200, 1000);
    await ctx.redis.hset(saleKeys(ctx.config.REDIS_PREFIX, sale.id).meta, 'q_rate', '10');
    for (let i = 0; i < 60; i += 1) await joinQueue(inRedis(sale.id), `buyer-${i}`);
    const seen: { at: number; front: number }[] = [];
    for (let i = 0; i < 40; i += 1) {
      const read = await admitQueue(inRedis(sale.id));
      if (read.kind === 'door') seen.push({ at: read.door.now, front: read.door.front });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const { at, front } of seen) expect(front).toBeLessThanOrEqual(Math.max(0, Math.floor((10 * (at - sale.startsAt)) / 1000)));
    const last = seen.at(-1)!;
    // Asked every 50 ms: within one admission of the rate (lazy, whole buyers only).
    expect(last.front).toBeGreaterThanOrEqual(Math.floor((10 * (last.at - sale.startsAt)) / 1000) - 1);
  });

  it('records a paid order once (what may come back falls by its units); nothing for an open sale', async () => {
    const sale = await queuedSale(-1000, 3);
    await recordPaid(inRedis(sale.id), 'r-1', 2);
    await recordPaid(inRedis(sale.id), 'r-1', 2);
    expect(await ctx.redis.hgetall(saleKeys(ctx.config.REDIS_PREFIX, sale.id).paid)).toEqual({ 'r-1': '2', units: '2' });
  });

  it('keeps the door through a rebuild: the terms written back from the record, the queue and turns untouched', async () => {
    const sale = await queuedSale(-1000, 3);
    for (const buyer of ['a', 'b']) await joinQueue(inRedis(sale.id), buyer);
    await admitQueue(inRedis(sale.id));
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const before = await Promise.all([
      ctx.redis.zrange(keys.queue, 0, -1, 'WITHSCORES'),
      ctx.redis.zrange(keys.turns, 0, -1, 'WITHSCORES'),
      ctx.redis.hgetall(keys.door),
    ]);

    await rebuildSaleState(
      store(),
      { ...sale, admission: { ...ADMISSION, admitPerSecond: 3, paused: true }, operatorPaused: false, controlsVersion: 0 },
      { remaining: 3, generation: 'gen-2', buyers: [] },
    );

    expect((await readSaleState(inRedis(sale.id)))?.admission).toEqual({
      ...ADMISSION,
      admitPerSecond: 3,
      paused: true,
    });
    expect(
      await Promise.all([
        ctx.redis.zrange(keys.queue, 0, -1, 'WITHSCORES'),
        ctx.redis.zrange(keys.turns, 0, -1, 'WITHSCORES'),
        ctx.redis.hgetall(keys.door),
      ]),
    ).toEqual(before);
  });
});
