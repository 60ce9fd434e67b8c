import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { createLiveSale, createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { createGatewayMetrics } from '../metrics.ts';
import { SaleHistory, historyMaxBytes } from './sale-history.ts';
import { SeriesRing } from './series-ring.ts';
import { TrafficSampler } from './traffic-sampler.ts';

// The dashboard's history against a real Redis: what each point holds, and what it costs in memory.
let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

const logger = createLogger('history-test', 'silent');

/** A history on a clock the test moves, following `ids`. */
function historyOf(ids: () => number[], options: { stepMs?: number; windowMs?: number; maxSales?: number } = {}) {
  let now = 1_000_000;
  const metrics = createGatewayMetrics();
  const history = new SaleHistory(
    ctx.sales,
    new TrafficSampler(metrics, () => now),
    logger,
    { stepMs: options.stepMs ?? 1000, windowMs: options.windowMs ?? 60_000, maxSales: options.maxSales ?? 16, liveSaleIds: ids },
    () => now,
  );
  return { history, metrics, advance: (ms: number) => (now += ms) };
}

describe('SaleHistory', () => {
  it("takes a sale's remaining and stock, units accepted and orders written per second, in flight and lag, from Redis", async () => {
    const sale = await createLiveSale(ctx, { stock: 50 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const { history, advance } = historyOf(() => [sale.id]);
    await history.sample();

    // In the next second: 10 units taken and their entries added; a worker takes 8, writes 6.
    await ctx.redis.hincrby(keys.meta, 'remaining', -10);
    for (let i = 0; i < 10; i++) await ctx.redis.xadd(keys.stream, '*', 'r', `r-${i}`);
    const [[, entries]] = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test', 'COUNT', 8, 'STREAMS', keys.stream, '>')) as [
      [string, [string, string[]][]],
    ];
    await ctx.redis.xack(keys.stream, ORDER_WRITERS_GROUP, ...entries.slice(0, 6).map(([id]) => id));
    advance(1000);
    await history.sample();

    expect(history.salePoints(sale.id)).toEqual({
      t: [1_000_000, 1_001_000],
      series: {
        remaining: [50, 40],
        stock: [50, 50],
        acceptedPerSecond: [null, 10],
        writtenPerSecond: [null, 6],
        inFlight: [0, 4],
        lag: [0, 2],
      },
    });
  });

  it("takes this process's purchases per second by outcome and latency p50/p99 from its own metrics", async () => {
    const { history, metrics, advance } = historyOf(() => []);
    await history.sample();
    for (let i = 0; i < 20; i++) metrics.purchases.inc('reserved');
    for (let i = 0; i < 10; i++) metrics.purchases.inc('SOLD_OUT');
    for (let i = 0; i < 30; i++) metrics.purchaseSeconds.observe(0.0015);
    advance(2000);
    await history.sample();

    expect(history.process.points()).toEqual({ t: [1_002_000], series: { reserved: [10], SOLD_OUT: [5], p50Ms: [1.5], p99Ms: [1.99] } });
  });

  it('holds at most maxSales sales and the window of each, within the memory it states', async () => {
    const sales = await Promise.all(Array.from({ length: 5 }, () => createLiveSale(ctx, { stock: 10 })));
    let live = sales.map((sale) => sale.id).sort((a, b) => a - b);
    const { history, advance } = historyOf(() => live, { stepMs: 100, windowMs: 2000, maxSales: 3 });
    for (let step = 0; step < 60; step++) {
      await history.sample();
      advance(100);
    }
    const newest = live.slice(2);
    expect(live.map((id) => history.salePoints(id)?.t.length ?? 0)).toEqual([0, 0, 20, 20, 20]);
    // A sale that ended keeps its history while within the window, then goes.
    live = newest.slice(0, 2);
    await history.sample();
    expect(history.salePoints(newest[2]!)?.t.length).toBe(20);
    advance(2500);
    await history.sample();
    expect(history.salePoints(newest[2]!)).toBeUndefined();

    expect(history.bytes).toBeLessThanOrEqual(history.maxBytes);
    expect(history.maxBytes).toBe(historyMaxBytes(20, 3));
  });

  it('costs at most 1,620,000 bytes with the defaults (900 points of 16 sales and of the process), as docs/operations.md states', () => {
    expect(historyMaxBytes(900, 16)).toBe(1_620_000);
  });

  it('stop() resolves only once the step still reading Redis has ended, and no step is taken after it', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    let reads = 0;
    // A follower list that counts the steps which asked for it (each step asks once, before its reads).
    const { history } = historyOf(
      () => {
        reads += 1;
        return [sale.id];
      },
      { stepMs: 100 },
    );
    // The step start() takes at once is still reading Redis when stop() is called.
    history.start();
    expect(reads).toBe(0);
    await history.stop();
    expect(reads).toBe(1);
    expect(history.salePoints(sale.id)?.t).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(reads).toBe(1);
  });
});

describe('SeriesRing', () => {
  it('keeps the newest points in order, nulls where a series had no value, and never grows past its capacity', () => {
    const ring = new SeriesRing(3, 2);
    ring.push(1, { a: 1 });
    ring.push(2, { a: 2, b: 20 });
    ring.push(3, { a: null, b: 30, c: 300 });
    ring.push(4, { a: 4, b: 40 });

    expect(ring.points()).toEqual({ t: [2, 3, 4], series: { a: [2, null, 4], b: [20, 30, 40] } });
    expect(ring.points(1)).toEqual({ t: [4], series: { a: [4], b: [40] } });
    expect(ring.latest()).toEqual({ a: 4, b: 40 });
    expect(ring.bytes).toBe(3 * 3 * 8);
  });
});
