import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { buyerToken, startRedisServer, type RedisServer } from '@flashsale/harness';
import { createLiveSale, createTestContext, type TestContext } from '../support/context.ts';
import { commandCounts, commandsBetween } from '../support/command-stats.ts';
import { startGateway, type TestGateway } from '../support/gateway.ts';

// What a reservation lookup costs in Redis, counted by a redis-server of the test's own: nothing else
// talks to it but this gateway, so INFO commandstats sees exactly what the lookup cost.

let server: RedisServer;
let ctx: TestContext;
let gateway: TestGateway;

beforeAll(async () => {
  server = await startRedisServer();
  ctx = createTestContext({ REDIS_URL: server.url });
  gateway = await startGateway(ctx);
  // The gateway's one Redis reader on a timer (the dashboard history, which reads every sale live in
  // the shared MySQL, other files' sales too) would be counted with what is measured here.
  await gateway.gateway.history.stop();
});
afterAll(async () => {
  await gateway.close();
  await ctx.close();
  await server.stop();
});

type Entry = [id: string, fields: string[]];

/** More dead letters than the old lookup read (10,000): it scanned the stream and missed anything past them. */
const OTHER_DEAD_LETTERS = 12_000;

describe('what a reservation lookup costs in Redis', () => {
  it('is one HGET for a rejected reservation, however many dead letters the sale has', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const token = buyerToken('rejected-buyer');
    const purchase = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(purchase.status).toBe(202);
    const { reservationId } = (await purchase.json()) as { reservationId: string };
    // Thousands of other entries, all set aside by the real dead-letter script before this buyer's.
    const filling = ctx.redis.pipeline();
    for (let i = 0; i < OTHER_DEAD_LETTERS; i += 1) {
      filling.xadd(
        keys.stream,
        '*',
        'r',
        newReservationId(sale.id),
        'u',
        `other-${i}`,
        'q',
        '1',
        't',
        String(Date.now()),
        'g',
        sale.generation,
      );
    }
    await filling.exec();
    const [[, entries]] = (await ctx.redis.xreadgroup(
      'GROUP',
      ORDER_WRITERS_GROUP,
      'test',
      'COUNT',
      OTHER_DEAD_LETTERS + 1,
      'STREAMS',
      keys.stream,
      '>',
    )) as [[string, Entry[]]];
    const [own, ...others] = entries;
    const deadLettering = ctx.redis.pipeline(
      [...others, own!].map(([entryId, fields]) => [
        'deadLetter',
        keys.stream,
        keys.deadLetter,
        keys.rejected,
        keys.buyers,
        ORDER_WRITERS_GROUP,
        entryId,
        'OVER_STOCK',
        1,
        '1',
        ...fields,
      ]),
    );
    for (const [error] of (await deadLettering.exec())!) expect(error).toBeNull();
    expect(await ctx.redis.xlen(keys.deadLetter)).toBe(OTHER_DEAD_LETTERS + 1);

    const before = await commandCounts(server.url);
    const res = await fetch(`${gateway.url}/api/reservations/${reservationId}`, { headers: { authorization: `Bearer ${token}` } });
    const after = await commandCounts(server.url);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      reservationId,
      saleId: sale.id,
      quantity: 1,
      status: 'rejected',
      orderId: null,
      payBy: null,
      reason: 'OVER_STOCK',
    });
    expect(commandsBetween(before, after)).toEqual({ hget: 1 });
    // The dead-letter stream is what it was: operators and the audit read it, its last entry this one.
    const [[, lastFields]] = (await ctx.redis.xrevrange(keys.deadLetter, '+', '-', 'COUNT', 1)) as [Entry];
    expect(lastFields).toEqual(['id', own![0], 'reason', 'OVER_STOCK', 'deliveries', '1', ...own![1]]);
  });
});
