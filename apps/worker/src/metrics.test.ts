import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, serveMetrics } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { saleKeys } from '@flashsale/redis-store';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { OrderWorker } from './order-worker.ts';
import { createWorkerMetrics } from './metrics.ts';

let ctx: TestContext;
let worker: OrderWorker | undefined;

beforeEach(() => {
  ctx = createTestContext();
});
afterEach(async () => {
  await worker?.stop();
  await ctx.close();
});

/** The value of one sample in Prometheus text, e.g. `flashsale_worker_dead_letters_total{reason="OVER_STOCK"}`. */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('worker metrics', () => {
  it('count orders written, entries set aside by reason and batches, served on /metrics with /healthz', async () => {
    const sale = await createLiveSale(ctx, { stock: 3 });
    for (const buyer of ['a', 'b', 'c']) {
      expect(
        (
          await ctx.store.reserve({
            saleId: sale.id,
            userId: buyer,
            quantity: 1,
            reservationId: newReservationId(sale.id),
          })
        ).kind,
      ).toBe('reserved');
    }
    // One entry over stock (Redis was told of more units than MySQL has) and one malformed.
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    await ctx.redis.xadd(stream, '*', 'r', newReservationId(sale.id), 'u', 'd', 'q', '1', 't', String(Date.now()), 'g', sale.generation);
    await ctx.redis.xadd(stream, '*', 'r', 'x');

    const metrics = createWorkerMetrics();
    worker = new OrderWorker(
      { sales: ctx.sales, logger: createLogger('worker-test', 'silent'), observer: metrics.observer },
      { batchSize: 100, idleMs: 5, claimIdleMs: 200, maxDeliveries: 3, salesRefreshMs: 50, writesInFlight: 2 },
    );
    metrics.watch(worker);
    const server = serveMetrics(metrics.registry, 0);
    await once(server, 'listening');
    try {
      worker.start();
      await ctx.store.sale(sale.id).waitForDrain();
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const response = await fetch(`${base}/metrics`);
      expect(response.status).toBe(200);
      const text = await response.text();

      expect(sample(text, 'flashsale_worker_orders_written_total')).toBe(3);
      expect(sample(text, 'flashsale_worker_entries_replayed_total')).toBe(0);
      expect(sample(text, 'flashsale_worker_dead_letters_total{reason="OVER_STOCK"}')).toBe(1);
      expect(sample(text, 'flashsale_worker_dead_letters_total{reason="MALFORMED_ENTRY"}')).toBe(1);
      expect(sample(text, 'flashsale_worker_write_failures_total')).toBe(0);
      expect(sample(text, 'flashsale_worker_batch_duration_seconds_count')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'flashsale_worker_entries_held')).toBe(0);
      expect(text).toContain('flashsale_worker_process_resident_memory_bytes');
      expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
      expect((await fetch(`${base}/nothing`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
