import { setTimeout as sleep } from 'node:timers/promises';
import type { SaleStore, ScriptedRedis } from '@flashsale/redis-store';
import type { PrismaClient } from '@flashsale/order-store';
import { spawnWorker } from '@flashsale/harness';
import { saleWithBacklog } from './drain.ts';

/**
 * The expiry against the drain, by one worker process: `count` reservations wait in a sale's stream; the
 * worker writes them as orders (the drain, timed from its start to the stream drained), then every order
 * is made due at once (payBy moved to the past) and the clock runs until the last one is expired in
 * MySQL and its unit back in Redis's remaining (the expiry: close in MySQL, return to Redis, mark
 * returned). Both are orders per second of the same worker on the same sale, so their ratio says whether
 * expiring a sale's unpaid orders keeps up with writing them.
 */
export async function expiryByWorker(redis: ScriptedRedis, store: SaleStore, prisma: PrismaClient, env: NodeJS.ProcessEnv, count: number) {
  const sale = await saleWithBacklog(redis, store, prisma, count);
  const inRedis = store.sale(sale.id);
  // A sweep every 50 ms: the measure is of the passes, not of the wait for the next one.
  const worker = await spawnWorker({ ...env, REDIS_PREFIX: store.prefix, EXPIRY_SWEEP_MS: '50' });
  try {
    const drainStarted = performance.now();
    await inRedis.waitForDrain(600_000, 5);
    const drainSeconds = (performance.now() - drainStarted) / 1000;
    const expiryStarted = performance.now();
    await prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) - INTERVAL 1 SECOND WHERE sale_id = ${sale.id}`;
    for (;;) {
      const remaining = (await inRedis.state())?.remaining ?? 0;
      if (remaining === count) break;
      if (performance.now() - expiryStarted > 600_000)
        throw new Error(`the expiry left ${count - remaining} units unreturned after 10 minutes`);
      await sleep(5);
    }
    const expirySeconds = (performance.now() - expiryStarted) / 1000;
    const pending = await prisma.stockReturn.count({ where: { saleId: sale.id, state: 'pending' } });
    const expired = await prisma.order.count({ where: { saleId: sale.id, status: 'expired' } });
    if (expired !== count) throw new Error(`the worker expired ${expired} orders of ${count}`);
    return { drainSeconds, expirySeconds, pendingAtEnd: pending };
  } finally {
    await worker.kill('SIGTERM');
  }
}
