import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { createSaleStore, listenForWork, redisNow } from '@flashsale/redis-store';
import { startRedisServer, type RedisServer } from '@flashsale/harness';
import { createLiveSale, createTestContext, salesWith, type TestContext } from '../../../test/support/context.ts';
import { commandCounts, commandsBetween } from '../../../test/support/command-stats.ts';
import { until } from '../../../test/support/until.ts';
import { OrderWorker, type OrderWorkerOptions } from './order-worker.ts';

// The worker's idle cost against the number of live sales, counted by a Redis of its own (INFO
// commandstats counts every command it served, whoever sent it).
const OPTIONS: OrderWorkerOptions = {
  batchSize: 100,
  idleMs: 5,
  claimIdleMs: 15_000,
  maxDeliveries: 5,
  salesRefreshMs: 1000,
  writesInFlight: 2,
  sweepMs: 250,
  sweepPerSecond: 500,
};

let server: RedisServer;
let ctx: TestContext;

beforeAll(async () => {
  server = await startRedisServer();
  ctx = createTestContext({ REDIS_URL: server.url });
});
afterAll(async () => {
  await ctx?.close();
  await server?.stop();
});

/** Puts `count` live sales in Redis only (the worker reads nothing of a sale from MySQL). */
async function publishSales(prefix: string, count: number): Promise<void> {
  const store = createSaleStore(ctx.redis, prefix);
  const now = await redisNow(ctx.redis);
  for (let first = 1; first <= count; first += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, count - first + 1) }, (_, i) =>
        store.publish({ id: first + i, name: 'idle', stock: 10, perUserLimit: 1, startsAt: now - 60_000, endsAt: now + 3_600_000 }, 'g1'),
      ),
    );
  }
}

function startWorker(prefix: string, options: Partial<OrderWorkerOptions> = {}): OrderWorker {
  const worker = new OrderWorker(
    { sales: salesWith(ctx, { prefix }), logger: createLogger('worker-test', 'silent') },
    { ...OPTIONS, ...options },
  );
  worker.start();
  return worker;
}

/** Stream reads and claims a second by a worker over `seconds`, after its first whole sweep. */
async function idleReadsPerSecond(sales: number, seconds: number): Promise<number> {
  const prefix = `idle-${sales}`;
  await publishSales(prefix, sales);
  const worker = startWorker(prefix);
  try {
    await sleep(1500);
    const before = await commandCounts(server.url);
    await sleep(seconds * 1000);
    const commands = commandsBetween(before, await commandCounts(server.url));
    return ((commands.xreadgroup ?? 0) + (commands.xautoclaim ?? 0)) / seconds;
  } finally {
    await worker.stop();
  }
}

describe('an idle worker', () => {
  it('reads at most WORKER_SWEEP_PER_SECOND streams a second, however many sales are live', async () => {
    const few = await idleReadsPerSecond(20, 2);
    const many = await idleReadsPerSecond(3000, 2);
    // 20 sales: each swept every 250 ms, 80 reads a second (and a claim each 3.75 s).
    expect(few).toBeGreaterThan(40);
    expect(few).toBeLessThan(120);
    // 3,000 sales: 500 reads a second (the rate), plus at most as many claims; polling every sale
    // every round, as the worker did, was 3,000 x 200 a second.
    expect(many).toBeGreaterThan(250);
    expect(many).toBeLessThan(2 * 500 * 1.2);
  });

  it('reads a signalled sale at once, and a sale nobody signalled within its sweep', async () => {
    // A sweep so slow it never comes round during the test: only the signal brings the order.
    const prefix = ctx.config.REDIS_PREFIX;
    const signalled = await createLiveSale(ctx, { stock: 5 });
    const subscriber = ctx.redis.duplicate();
    const worker = startWorker(prefix, { sweepMs: 600_000, sweepPerSecond: 1 });
    await listenForWork(subscriber, prefix, { onSale: (saleId) => worker.signal(saleId), onResubscribed: () => worker.sweepAll() });
    try {
      await sleep(300); // the first whole sweep, at start, is over
      const reservationId = newReservationId(signalled.id);
      expect((await ctx.store.reserve({ saleId: signalled.id, userId: 'buyer', quantity: 1, reservationId })).kind).toBe('reserved');
      const started = performance.now();
      ctx.store.workSignaller().reserved(signalled.id);
      await until(
        () => ctx.prisma.order.count({ where: { reservationId } }),
        (n) => n === 1,
        60_000,
      );
      // Long before the 10-minute sweep could have read it (a tenth of it: room for a busy machine).
      expect(performance.now() - started).toBeLessThan(60_000);

      // Not signalled (a gateway died between the script and the publish): a second worker sweeping
      // every 300 ms writes it all the same.
      const quiet = await createLiveSale(ctx, { stock: 5 });
      const sweeping = startWorker(prefix, { sweepMs: 300 });
      try {
        await sleep(300);
        const unsignalled = newReservationId(quiet.id);
        await ctx.store.reserve({ saleId: quiet.id, userId: 'buyer', quantity: 1, reservationId: unsignalled });
        await until(
          () => ctx.prisma.order.count({ where: { reservationId: unsignalled } }),
          (n) => n === 1,
          60_000,
        );
      } finally {
        await sweeping.stop();
      }
    } finally {
      subscriber.disconnect();
      await worker.stop();
    }
  });
});
