import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { deadLetter } from './dead-letters.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { compareEntryIds, countEntriesAfter, streamBacklog, undeliveredLag } from './stream-backlog.ts';
import { isDrained, waitForDrain } from './stream-drain.ts';
import { snapshotSale } from './sale-snapshot.ts';
import { DrainTimeout } from '@flashsale/domain';
import { saleRef } from './store-ref.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

async function reserveFor(saleId: number, buyers: string[]): Promise<void> {
  for (const userId of buyers) {
    const outcome = await reservePurchase(
      { redis: ctx.redis, prefix: ctx.config.REDIS_PREFIX },
      {
        saleId,
        userId,
        quantity: 1,
        reservationId: newReservationId(saleId),
      },
    );
    expect(outcome.kind).toBe('reserved');
  }
}

/** One worker taking entries without acknowledging them yet. */
function deliver(saleId: number, count: number): Promise<unknown> {
  return ctx.redis.xreadgroup(
    'GROUP',
    ORDER_WRITERS_GROUP,
    'test-consumer',
    'COUNT',
    count,
    'STREAMS',
    saleKeys(ctx.config.REDIS_PREFIX, saleId).stream,
    '>',
  );
}

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(ctx.redis, ctx.config.REDIS_PREFIX, saleId);

describe('streamBacklog', () => {
  it('is empty for a freshly published sale', async () => {
    const sale = await createLiveSale(ctx);

    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });

  it('is empty for a sale whose stream does not exist', async () => {
    expect(await streamBacklog(inRedis(876_543_210))).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });

  it('counts undelivered entries as lag and delivered, unacknowledged ones as pending', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b', 'c']);
    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 3, pending: 0, deadLettered: 0 });

    await deliver(sale.id, 2);
    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 1, pending: 2, deadLettered: 0 });
  });

  it('still counts undelivered entries when Redis cannot (an entry was deleted, lag is null)', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b', 'c', 'd']);
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    const entries = await ctx.redis.xrange(stream, '-', '+');
    await ctx.redis.xdel(stream, entries[1]![0]);
    await deliver(sale.id, 1);

    const groups = (await ctx.redis.xinfo('GROUPS', stream)) as unknown[][];
    expect(groups[0]![groups[0]!.indexOf('lag') + 1]).toBeNull();
    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 2, pending: 1, deadLettered: 0 });
  });

  it('counts dead-lettered entries, which are no longer pending', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b']);
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await deliver(sale.id, 1);
    const [[entryId, fields]] = (await ctx.redis.xrange(keys.stream, '-', '+', 'COUNT', 1)) as [[string, string[]]];

    await deadLetter(inRedis(sale.id), { id: entryId, fields }, 'OVER_STOCK', 1);

    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 1, pending: 0, deadLettered: 1 });
  });
});

describe('compareEntryIds', () => {
  it.each([
    ['9-5', '10-0', -1],
    ['10-0', '9-5', 1],
    ['10-2', '10-10', -1],
    ['10-10', '10-10', 0],
    ['0-0', '1-0', -1],
  ])('%s against %s: %i', (a, b, sign) => {
    expect(Math.sign(compareEntryIds(a, b))).toBe(sign);
  });
});

describe('undeliveredLag', () => {
  it.each<[string, { lag: number | null; lastDeliveredId: string }, string | null, number | null]>([
    ['nothing after the position, whatever lag says (a promoted replica said 222)', { lag: 222, lastDeliveredId: '10-0' }, '10-0', 0],
    ['nothing after the position, lag unknown', { lag: null, lastDeliveredId: '10-0' }, '9-0', 0],
    ['an empty stream', { lag: 5, lastDeliveredId: '0-0' }, null, 0],
    ['entries after the position, lag positive: taken', { lag: 3, lastDeliveredId: '10-0' }, '11-0', 3],
    ['entries after the position, lag 0: not trusted, to be counted', { lag: 0, lastDeliveredId: '10-0' }, '11-0', null],
    ['entries after the position, lag unknown: to be counted', { lag: null, lastDeliveredId: '9-9' }, '10-0', null],
  ])('%s', (_, group, lastEntryId, expected) => {
    expect(undeliveredLag(group, lastEntryId)).toBe(expected);
  });
});

describe("the drain judged from the ids, when the group's lag is wrong or unknown", () => {
  const prefix = () => ctx.config.REDIS_PREFIX;

  /** A sale with three reservations, all delivered and acknowledged: drained, whatever XINFO says next. */
  async function drainedSale() {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b', 'c']);
    const stream = saleKeys(prefix(), sale.id).stream;
    await deliver(sale.id, 3);
    const ids = ((await ctx.redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...ids);
    return { sale, stream, ids };
  }

  const lagOf = async (stream: string) => {
    const [group] = (await ctx.redis.xinfo('GROUPS', stream)) as unknown[][];
    return group![group!.indexOf('lag') + 1];
  };

  it('is drained when nothing follows last-delivered-id, although XINFO GROUPS reports a lag (entries-read carried over wrong)', async () => {
    const { sale, stream } = await drainedSale();
    // What a promoted replica showed: the position at the last entry, entries-read behind it.
    await ctx.redis.xgroup('SETID', stream, ORDER_WRITERS_GROUP, '$', 'ENTRIESREAD', 0);
    expect(await lagOf(stream)).toBe(3);

    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
    expect(await waitForDrain(inRedis(sale.id), 1000)).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
    expect((await snapshotSale(inRedis(sale.id))).backlog).toEqual({ lag: 0, pending: 0 });
  });

  it('is drained when entries-read is unknown and nothing follows', async () => {
    const { sale, stream } = await drainedSale();
    await ctx.redis.xgroup('SETID', stream, ORDER_WRITERS_GROUP, '$', 'ENTRIESREAD', -1);

    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 0, pending: 0, deadLettered: 0 });
  });

  it('is not drained when XINFO GROUPS reports lag 0 but entries follow last-delivered-id: it counts them', async () => {
    const { sale, stream, ids } = await drainedSale();
    // The position moved back before two entries, entries-read left at 3: lag 0, two undelivered.
    await ctx.redis.xgroup('SETID', stream, ORDER_WRITERS_GROUP, ids[0]!, 'ENTRIESREAD', 3);
    expect(await lagOf(stream)).toBe(0);

    const backlog = await streamBacklog(inRedis(sale.id));
    expect(backlog).toEqual({ lag: 2, pending: 0, deadLettered: 0 });
    expect(isDrained(backlog)).toBe(false);
    expect((await snapshotSale(inRedis(sale.id))).backlog).toEqual({ lag: null, pending: 0 });
    await expect(waitForDrain(inRedis(sale.id), 100)).rejects.toThrow(
      new RegExp(`undelivered entries follow last-delivered-id ${ids[0]} \\(the first ${ids[1]}; XINFO GROUPS lag 0, entries-read 3\\)`),
    );
  });

  it('is not drained when entries-read is unknown and an entry follows', async () => {
    const { sale, stream } = await drainedSale();
    await ctx.redis.xgroup('SETID', stream, ORDER_WRITERS_GROUP, '$', 'ENTRIESREAD', -1);
    await reserveFor(sale.id, ['d']);
    expect(await lagOf(stream)).toBeNull();

    expect(await streamBacklog(inRedis(sale.id))).toEqual({ lag: 1, pending: 0, deadLettered: 0 });
  });

  it('says which consumer holds the oldest pending entry when the wait gives up', async () => {
    const sale = await createLiveSale(ctx);
    await reserveFor(sale.id, ['a', 'b']);
    await deliver(sale.id, 2);
    const [[oldest]] = (await ctx.redis.xrange(saleKeys(prefix(), sale.id).stream, '-', '+', 'COUNT', 1)) as [[string, string[]]];

    const failure = await waitForDrain(inRedis(sale.id), 50).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(DrainTimeout);
    expect((failure as Error).message).toMatch(
      new RegExp(
        `lag 0, pending 2\\): 2 entries pending, the oldest ${oldest} held by consumer test-consumer, idle \\d+ ms after 1 deliveries`,
      ),
    );
  });
});

describe('countEntriesAfter (the count when XINFO cannot be trusted)', () => {
  it('counts the entries after an id a page of 1,000 at a time, up to its cap', async () => {
    const stream = `${ctx.config.REDIS_PREFIX}:count-after-${Date.now()}`;
    const pipeline = ctx.redis.pipeline();
    for (let i = 0; i < 2500; i += 1) pipeline.xadd(stream, '*', 'n', String(i));
    const ids = ((await pipeline.exec()) ?? []).map(([, id]) => String(id));
    try {
      expect(await countEntriesAfter(ctx.redis, stream, '0-0')).toBe(2500);
      expect(await countEntriesAfter(ctx.redis, stream, ids[999]!)).toBe(1500);
      expect(await countEntriesAfter(ctx.redis, stream, ids[1999]!)).toBe(500);
      expect(await countEntriesAfter(ctx.redis, stream, ids[2499]!)).toBe(0);
      // Past the cap it stops reading: the count says "at least".
      expect(await countEntriesAfter(ctx.redis, stream, '0-0', 1200)).toBe(1200);
      expect(await countEntriesAfter(ctx.redis, stream, '0-0', 2000)).toBe(2000);
    } finally {
      await ctx.redis.del(stream);
    }
  });
});
