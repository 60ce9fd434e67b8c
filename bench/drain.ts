import { randomUUID } from 'node:crypto';
import { createConnection } from 'mariadb';
import { newReservationId } from '@flashsale/domain';
import { publishSale, saleKeys, type ScriptedRedis } from '@flashsale/redis-store';
import { insertSale, poolConfigFromUrl, type PrismaClient } from '@flashsale/order-store';
import { spawnWorker, waitForDrain } from '@flashsale/harness';

async function newSale(prisma: PrismaClient, prefix: string, stock: number) {
  return insertSale(prisma, { name: `${prefix} drain`, stock, perUserLimit: 1, startsAt: new Date(Date.now() - 60_000), endsAt: new Date(Date.now() + 3_600_000) });
}

/**
 * (d), the workers: `count` reservations accepted by the reserve script (the real one, pipelined) wait
 * in a sale's stream; then one worker process starts and the clock runs from its "worker started" line
 * until the stream's group has neither lag nor pending entries, i.e. every order is committed in MySQL.
 */
export async function drainByWorker(redis: ScriptedRedis, prisma: PrismaClient, env: NodeJS.ProcessEnv, prefix: string, count: number): Promise<number> {
  const sale = await newSale(prisma, prefix, count);
  await publishSale(redis, prefix, sale, sale.generation);
  const keys = saleKeys(prefix, sale.id);
  for (let start = 0; start < count; start += 1000) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(count, start + 1000); i += 1) {
      // Queued on the pipeline, not sent: exec() below sends them all.
      void (pipeline as unknown as ScriptedRedis).reserve(keys.meta, keys.buyers, keys.stream, `drain-${i}`, 1, newReservationId(sale.id));
    }
    await pipeline.exec();
  }
  if ((await redis.xlen(keys.stream)) !== count) throw new Error('the stream does not hold every reservation');
  const worker = await spawnWorker({ ...env, REDIS_PREFIX: prefix });
  const started = performance.now();
  try {
    // Looked at every 5 ms, so that the clock stops within 5 ms of the last acknowledgement (the raw
    // baseline's stops when its last INSERT returns).
    await waitForDrain(redis, prefix, sale.id, 600_000, 5);
    const seconds = (performance.now() - started) / 1000;
    const written = await prisma.order.count({ where: { saleId: sale.id } });
    if (written !== count) throw new Error(`the worker wrote ${written} orders of ${count}`);
    return seconds;
  } finally {
    await worker.kill('SIGTERM');
  }
}

/**
 * (d), the raw baseline: the same rows (same columns, same kind of ids) written with multi-row INSERTs
 * of the workers' batch size (WORKER_BATCH_SIZE, the same the worker process gets), one connection,
 * autocommit: what MySQL itself takes to store them.
 */
export async function drainRaw(prisma: PrismaClient, databaseUrl: string, prefix: string, count: number, batchSize: number): Promise<number> {
  const sale = await newSale(prisma, prefix, count);
  const connection = await createConnection(poolConfigFromUrl(databaseUrl));
  try {
    const now = new Date();
    const started = performance.now();
    for (let start = 0; start < count; start += batchSize) {
      const rows = Math.min(batchSize, count - start);
      const values: unknown[] = [];
      for (let i = 0; i < rows; i += 1) values.push(`${sale.id}-${randomUUID()}`, sale.id, `drain-${start + i}`, 1, now);
      await connection.query(`INSERT INTO orders (reservation_id, sale_id, user_id, quantity, reserved_at) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?)').join(', ')}`, values);
    }
    return (performance.now() - started) / 1000;
  } finally {
    await connection.end();
  }
}
