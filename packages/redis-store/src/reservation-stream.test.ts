import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { reservePurchase } from './reserve-purchase.ts';
import { acknowledge, claimIdleEntriesOf, keepHeld, readNewEntries, readUnacknowledged } from './reservation-stream.ts';
import { saleRef, type StoreRef } from './store-ref.ts';

const env = contextPerFile();

async function reserveFor(saleId: number, buyers: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const userId of buyers) {
    const reservationId = newReservationId(saleId);
    expect(
      (await reservePurchase({ redis: env.ctx.redis, prefix: env.ctx.config.REDIS_PREFIX }, { saleId, userId, quantity: 1, reservationId }))
        .kind,
    ).toBe('reserved');
    ids.push(reservationId);
  }
  return ids;
}

const prefix = () => env.ctx.config.REDIS_PREFIX;
const pendingOn = async (saleId: number) =>
  ((await env.ctx.redis.xpending(saleKeys(prefix(), saleId).stream, ORDER_WRITERS_GROUP)) as [number])[0];

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

/** This file's client and prefix, as the record functions that span sales take them. */
const store = (): StoreRef => ({ redis: env.ctx.redis, prefix: prefix() });

describe('readNewEntries', () => {
  it("reads each sale's new entries once, and tells a sale whose stream key is broken apart from the others", async () => {
    const [good, broken] = [await createLiveSale(env.ctx), await createLiveSale(env.ctx)];
    await reserveFor(good.id, ['a', 'b']);
    await env.ctx.redis.del(saleKeys(prefix(), broken.id).stream);
    await env.ctx.redis.set(saleKeys(prefix(), broken.id).stream, 'not a stream');
    const missing = 987_654_321;

    const round = await readNewEntries(store(), 'consumer-1', [good.id, broken.id, missing], 10);

    expect([...round.entries.keys()]).toEqual([good.id]);
    expect(round.entries.get(good.id)!.map((entry) => entry.fields.filter((_, i) => i % 2 === 0))).toEqual([
      ['r', 'u', 'q', 't', 'g'],
      ['r', 'u', 'q', 't', 'g'],
    ]);
    expect([...round.failures.keys()]).toEqual([broken.id]);
    expect((await readNewEntries(store(), 'consumer-1', [good.id], 10)).entries.size).toBe(0);
    expect(await pendingOn(good.id)).toBe(2);
  });
});

describe('claimIdleEntriesOf, keepHeld and acknowledge', () => {
  it('takes over entries idle on another consumer with their delivery counts, unless their holder keeps them', async () => {
    const sale = await createLiveSale(env.ctx);
    await reserveFor(sale.id, ['a', 'b']);
    const [first, second] = (await readNewEntries(store(), 'dead-one', [sale.id], 10)).entries.get(sale.id)!;
    // Both idle for a minute, as if their holder had died; then it shows it is alive for the second.
    await env.ctx.redis.xclaim(
      saleKeys(prefix(), sale.id).stream,
      ORDER_WRITERS_GROUP,
      'dead-one',
      0,
      first!.id,
      second!.id,
      'IDLE',
      60_000,
      'JUSTID',
    );
    await keepHeld(store(), 'dead-one', sale.id, [second!.id]);

    const round = await claimIdleEntriesOf(store(), 'live-one', [sale.id], 30_000, 10);

    expect(round).toEqual({ claimed: new Map([[sale.id, [{ entry: first, deliveries: 2 }]]]), failures: new Map() });
    await acknowledge(inRedis(sale.id), [first!.id, second!.id]);
    expect(await pendingOn(sale.id)).toBe(0);
  });

  it('claims nothing from a sale without a stream', async () => {
    expect(await claimIdleEntriesOf(store(), 'live-one', [987_654_320], 0, 10)).toEqual({
      claimed: new Map(),
      failures: new Map(),
    });
  });
});

describe('readUnacknowledged', () => {
  it('gives the reservations not delivered yet and those pending, up to the last entry, leaving out the acknowledged and the malformed', async () => {
    const sale = await createLiveSale(env.ctx);
    const keys = saleKeys(prefix(), sale.id);
    const ids = await reserveFor(sale.id, ['a', 'b', 'c']);
    await env.ctx.redis.xadd(keys.stream, '*', 'r', 'not-a-reservation');
    const [acked, pending] = (await readNewEntries(store(), 'consumer-1', [sale.id], 2)).entries.get(sale.id)!;
    await acknowledge(inRedis(sale.id), [acked!.id]);
    const lastId = ((await env.ctx.redis.xrevrange(keys.stream, '+', '-', 'COUNT', 1)) as [string, string[]][])[0]![0];
    // Accepted after the instant the caller looked at: not counted.
    await reserveFor(sale.id, ['d']);

    const unacknowledged = await readUnacknowledged(inRedis(sale.id), { lastDeliveredId: pending!.id, lastId });

    expect(unacknowledged.map((r) => [r.reservationId, r.userId, r.entryId])).toEqual([
      [ids[2], 'c', expect.any(String)],
      [ids[1], 'b', pending!.id],
    ]);
  });
});
