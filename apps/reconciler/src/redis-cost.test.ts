import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { decodeReservation, reserveArgs, saleKeys, type ReservationEntry, type StreamEntry } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { createOrderStore } from '@flashsale/order-store';
import { startRedisServer, type RedisServer } from '@flashsale/harness';
import { createIsolatedContext, createLiveSale, type TestContext } from '../../../test/support/context.ts';
import { redisWorkOf, type RedisWork } from '../../../test/support/command-stats.ts';
import type { AuditReport } from '@flashsale/sales';
import { auditAndReport, salesDeps, type SaleWatch } from '@flashsale/sales/testing';
import { watchOnce } from '../../../test/support/watch-once.ts';

// What the reconciler's per-sale work costs Redis, counted by a redis-server of the test's own (INFO
// stats and commandstats): nothing else talks to it, so the difference between two readings is the work.
// The same sale is measured with a short stream and with a long one, every entry of both acknowledged:
// an order in MySQL, or one in a hundred set aside as a dead letter.

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.stop();
});

/** Entries per pipeline, per read of the group and per order batch while the sale is filled. */
const CHUNK = 10_000;

type Entry = [id: string, fields: string[]];

/**
 * A live sale whose stream holds `entries` reservations, all delivered and acknowledged: one in every
 * `entries / deadLetters` set aside by the dead-letter script, the others written as orders first.
 */
async function saleWithAcknowledgedEntries(ctx: TestContext, entries: number, deadLetters: number) {
  const prefix = ctx.config.REDIS_PREFIX;
  const sale = await createLiveSale(ctx, { stock: entries });
  const keys = saleKeys(prefix, sale.id);
  for (let from = 0; from < entries; from += CHUNK) {
    const commands = Array.from({ length: Math.min(CHUNK, entries - from) }, (_, k) => [
      'reserve',
      ...reserveArgs(keys, `buyer-${from + k}`, 1, newReservationId(sale.id)),
    ]);
    for (const [error] of (await ctx.redis.pipeline(commands).exec())!) expect(error).toBeNull();
  }
  const every = Math.floor(entries / deadLetters);
  let seen = 0;
  for (;;) {
    const reply = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'filler', 'COUNT', CHUNK, 'STREAMS', keys.stream, '>')) as
      [string, Entry[]][] | null;
    const read = reply?.[0]?.[1] ?? [];
    if (read.length === 0) break;
    const orders: ReservationEntry[] = [];
    const setAside: StreamEntry[] = [];
    for (const [id, fields] of read) {
      if (seen++ % every === 0) setAside.push({ id, fields });
      else {
        const decoded = decodeReservation(sale.id, id, fields);
        if (!decoded.ok) throw new Error(`entry ${id} is malformed`);
        orders.push(decoded.reservation);
      }
    }
    expect((await createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch(orders)).written).toHaveLength(orders.length);
    await ctx.store.sale(sale.id).acknowledge(orders.map((r) => r.entryId));
    await Promise.all(setAside.map((entry) => ctx.store.sale(sale.id).deadLetter(entry, 'OVER_STOCK', 1)));
  }
  expect(await ctx.redis.xlen(keys.stream)).toBe(entries);
  expect(await ctx.redis.xlen(keys.deadLetter)).toBe(deadLetters);
  return sale;
}

interface Measured {
  audit: RedisWork;
  watch: RedisWork;
  report: AuditReport | null;
}

/** One audit, then one watch pass (its checkpoint already in place), of a sale of `entries` reservations. */
async function measure(entries: number, deadLetters: number): Promise<Measured> {
  const ctx = await createIsolatedContext({ REDIS_URL: server.url });
  try {
    const sale = await saleWithAcknowledgedEntries(ctx, entries, deadLetters);
    const requested: unknown[] = [];
    const watchDeps: SaleWatch = {
      ...salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('cost-test', 'silent') }),
      publishGraceMs: 0,
      createGraceMs: 30_000,
      retentionMs: ctx.config.RECONCILER_STREAM_RETENTION_MS,
      watchAfterEndMs: ctx.config.RECONCILER_WATCH_AFTER_END_MS,
      retireAfterEndMs: ctx.config.RECONCILER_RETIRE_AFTER_END_MS,
      requestReconcile: async (saleId, reason) => void requested.push([saleId, reason]),
    };
    // The first pass records the sale's first checkpoint; the measured one verifies it and trims.
    await watchOnce(watchDeps);
    let report: AuditReport | null = null;
    const auditDeps = {
      ...salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: watchDeps.logger }),
      onReport: () => undefined,
    };
    const audit = await redisWorkOf(server.url, async () => {
      report = await auditAndReport(auditDeps, sale.id, 0);
    });
    const watch = await redisWorkOf(server.url, async () => {
      expect(await watchOnce(watchDeps)).toEqual(new Map([[sale.id, { kind: 'healthy' }]]));
    });
    expect(requested).toEqual([]);
    return { audit, watch, report };
  } finally {
    await ctx.close();
  }
}

describe("the reconciler's Redis work per sale", () => {
  it(
    "the audit's and the watch's Redis work does not grow with a stream of 200,000 acknowledged entries",
    { timeout: 300_000 },
    async () => {
      const short = await measure(100, 1);
      const long = await measure(200_000, 2_000);

      expect(long.report).toMatchObject({
        stock: 200_000,
        remaining: 0,
        inFlightUnits: 0,
        deadLetteredUnits: 2_000,
        unitsInDb: 198_000,
        drift: 0,
      });
      expect(short.report).toMatchObject({ stock: 100, remaining: 0, inFlightUnits: 0, deadLetteredUnits: 1, unitsInDb: 99, drift: 0 });
      // Numbers in the replies have more digits with the long stream (lengths, counters, the group's
      // entries-read): within twice the short stream's bytes and a few hundred more, and the same commands.
      for (const part of ['audit', 'watch'] as const) {
        expect(long[part].bytesSent, `bytes Redis sent for the ${part}`).toBeLessThanOrEqual(2 * short[part].bytesSent + 500);
        expect(long[part].commands, `commands Redis ran for the ${part}`).toEqual(short[part].commands);
      }
    },
  );
});
