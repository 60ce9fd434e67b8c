import { createConnection } from 'mariadb';
import { newReservationId } from '@flashsale/domain';
import { reserveArgs, workSignalChannel, type SaleStore, type ScriptedRedis } from '@flashsale/redis-store';
import { createOrderStore, poolConfigFromUrl, type PrismaClient } from '@flashsale/order-store';
import { spawnWorker, type AppProcess } from '@flashsale/harness';

async function newSale(prisma: PrismaClient, prefix: string, stock: number) {
  return createOrderStore(prisma).insertSale({
    name: `${prefix} drain`,
    stock,
    perUserLimit: 1,
    startsAt: new Date(Date.now() - 60_000),
    endsAt: new Date(Date.now() + 3_600_000),
  });
}

/**
 * A new sale (MySQL row, published in Redis) whose stream holds `count` reservations accepted by the
 * reserve script (the real one, pipelined on `redis`, the client `store` is bound to), buyers
 * `drain-<i>`, waiting for a worker.
 */
export async function saleWithBacklog(redis: ScriptedRedis, store: SaleStore, prisma: PrismaClient, count: number) {
  const sale = await newSale(prisma, store.prefix, count);
  await store.publish(sale, sale.generation);
  const { keys } = store.sale(sale.id);
  for (let start = 0; start < count; start += 1000) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(count, start + 1000); i += 1) {
      // Queued on the pipeline, not sent: exec() below sends them all.
      void (pipeline as unknown as ScriptedRedis).reserve(...reserveArgs(keys, `drain-${i}`, 1, newReservationId(sale.id), 3));
    }
    await pipeline.exec();
  }
  if ((await redis.xlen(keys.stream)) !== count) throw new Error('the stream does not hold every reservation');
  return sale;
}

/**
 * (d), the workers: `count` reservations accepted by the reserve script (the real one, pipelined) wait
 * in a sale's stream; then one worker process starts and the clock runs from its "worker started" line
 * until the stream's group has neither lag nor pending entries, i.e. every order is committed in MySQL.
 */
export async function drainByWorker(
  redis: ScriptedRedis,
  store: SaleStore,
  prisma: PrismaClient,
  env: NodeJS.ProcessEnv,
  count: number,
): Promise<number> {
  const sale = await saleWithBacklog(redis, store, prisma, count);
  const worker = await spawnWorker({ ...env, REDIS_PREFIX: store.prefix });
  const started = performance.now();
  try {
    // Looked at every 5 ms, so that the clock stops within 5 ms of the last acknowledgement (the raw
    // baseline's stops when its last INSERT returns).
    await store.sale(sale.id).waitForDrain(600_000, 5);
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
export async function drainRaw(
  prisma: PrismaClient,
  databaseUrl: string,
  prefix: string,
  count: number,
  batchSize: number,
): Promise<number> {
  const sale = await newSale(prisma, prefix, count);
  const connection = await createConnection(poolConfigFromUrl(databaseUrl));
  try {
    const now = new Date();
    // Due a day from now, as a real order would be within its window: rows due at once would be expired
    // by the next worker's expiry pass (the bench's expiry part), closing orders the sale never counted as
    // sold, which MySQL refuses (sold_units >= 0), and holding up that pass for every other sale.
    const payBy = new Date(now.getTime() + 86_400_000);
    const started = performance.now();
    for (let start = 0; start < count; start += batchSize) {
      const rows = Math.min(batchSize, count - start);
      const values: unknown[] = [];
      for (let i = 0; i < rows; i += 1) values.push(newReservationId(sale.id), sale.id, `drain-${start + i}`, 1, now, payBy);
      await connection.query(
        `INSERT INTO orders (reservation_id, sale_id, user_id, quantity, reserved_at, pay_by) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`,
        values,
      );
    }
    return (performance.now() - started) / 1000;
  } finally {
    await connection.end();
  }
}

/**
 * Worker processes (apps/worker) started once for the drains with several workers, each stopped
 * (SIGSTOP) whenever it is not being measured: a stopped worker reads nothing, so it takes no entry of
 * the next backlog while that is written, nor of a run that measures fewer workers than the pool holds.
 */
export interface WorkerPool {
  workers: AppProcess[];
  /** When the last worker was stopped (performance.now()). */
  stoppedAt: number;
  stop(): Promise<void>;
}

/** Starts `size` worker processes on `prefix`, waits until each is subscribed to the work signal, stops them all. */
export async function startWorkerPool(redis: ScriptedRedis, env: NodeJS.ProcessEnv, prefix: string, size: number): Promise<WorkerPool> {
  const started = await Promise.allSettled(Array.from({ length: size }, () => spawnWorker({ ...env, REDIS_PREFIX: prefix })));
  const workers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const pool: WorkerPool = {
    workers,
    stoppedAt: performance.now(),
    async stop() {
      // A stopped process handles SIGTERM only once it runs again.
      for (const worker of workers) worker.child.kill('SIGCONT');
      await Promise.all(workers.map((worker) => worker.kill('SIGTERM')));
    },
  };
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    await waitForSubscribers(redis, workSignalChannel(prefix), size);
  } catch (error) {
    await pool.stop();
    throw error;
  }
  for (const worker of workers) worker.child.kill('SIGSTOP');
  pool.stoppedAt = performance.now();
  return pool;
}

/**
 * The drain with `workers` of the pool's processes: `count` reservations spread evenly over `sales` sales
 * wait in their streams (written as in drainByWorker, the whole pool stopped). The clock starts, the
 * first `workers` processes of the pool run again (SIGCONT) and the sales are signalled on the work
 * channel, as a gateway does on its first purchase of a sale: a worker that learns of a sale it does not
 * list yet reads the list again at once (if its last read is 100 ms old: the pool has been stopped at
 * least that long) and reads the sale from then on. The clock stops when every sale's group has neither
 * lag nor pending entries; those workers are stopped again and the orders counted in MySQL, sale by sale.
 * The workers are started once and warm (the first call is the warm-up), unlike drainByWorker's. Returns
 * the seconds from the signal to the drain.
 */
export async function drainByWorkers(
  redis: ScriptedRedis,
  store: SaleStore,
  prisma: PrismaClient,
  pool: WorkerPool,
  { count, sales, workers }: { count: number; sales: number; workers: number },
): Promise<number> {
  const perSale = Math.floor(count / sales);
  if (perSale * sales !== count) throw new Error(`${count} reservations do not split evenly over ${sales} sales`);
  if (workers > pool.workers.length) throw new Error(`the pool holds ${pool.workers.length} workers, not ${workers}`);
  const ids: number[] = [];
  for (let i = 0; i < sales; i += 1) ids.push((await saleWithBacklog(redis, store, prisma, perSale)).id);
  const stoppedFor = performance.now() - pool.stoppedAt;
  if (stoppedFor < 150) await new Promise((resolve) => setTimeout(resolve, 150 - stoppedFor));
  const running = pool.workers.slice(0, workers);
  const clock = performance.now();
  for (const worker of running) worker.child.kill('SIGCONT');
  try {
    for (const id of ids) await redis.publish(workSignalChannel(store.prefix), String(id));
    // One sale after the other: each is looked at after the ones before it drained, so the clock stops
    // within 5 ms of the last sale's drain whatever their order.
    for (const id of ids) await store.sale(id).waitForDrain(600_000, 5);
  } finally {
    for (const worker of running) worker.child.kill('SIGSTOP');
    pool.stoppedAt = performance.now();
  }
  const seconds = (pool.stoppedAt - clock) / 1000;
  for (const id of ids) {
    const written = await prisma.order.count({ where: { saleId: id } });
    if (written !== perSale) throw new Error(`${workers} workers wrote ${written} orders of ${perSale} for sale ${id}`);
  }
  return seconds;
}

/** Waits until `count` connections are subscribed to `channel` (a worker subscribes around its start line). */
async function waitForSubscribers(redis: ScriptedRedis, channel: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [, subscribers] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
    if (Number(subscribers) >= count) return;
    if (Date.now() > deadline) throw new Error(`${Number(subscribers)} of ${count} workers subscribed to ${channel}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
