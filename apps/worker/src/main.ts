import { createLogger, loadConfig, onShutdownSignal, parseCommandLine, readinessProbe, serveMetricsPort } from '@flashsale/config';
import { connectRedis, createRedis, listenForWork, redisTargetOf, refuseEvictingRedis } from '@flashsale/redis-store';
import { checkConnectionBudget, createPrisma } from '@flashsale/order-store';
import { setTimeout as sleep } from 'node:timers/promises';
import { OrderWorker } from './order-worker.ts';
import { createWorkerMetrics } from './metrics.ts';
import { OrderExpiry } from './order-expiry.ts';

parseCommandLine({
  usage: `usage: npm run worker

The order workers: read the sales' reservation streams, write the orders to MySQL in batches, expire
unpaid orders; in the foreground until SIGTERM (finishes the batch in hand, then exits). No options:
configured by the environment only (REDIS_URL, DATABASE_URL, WORKER_PORT, WORKER_BATCH_SIZE, ...;
docs/operations.md, "Configuration").`,
});
const config = loadConfig();
const logger = createLogger('worker', config.LOG_LEVEL);
const metrics = createWorkerMetrics();
const onRedisError = (err: Error) => {
  metrics.storeErrors.redis.inc();
  logger.warn({ err }, 'redis connection error');
};
// No per-command retry limit: the worker's own loop retries, and an entry is never dropped for it.
const redis = createRedis(redisTargetOf(config), { name: 'worker', commandTimeoutMs: config.REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, onError: onRedisError, maxRetriesPerRequest: null });
// 16 prepared statements per connection: the quick pass's two, and room for the careful pass's.
const prisma = createPrisma(config.DATABASE_URL, config.WORKER_DB_POOL_SIZE, 16, { idleTimeoutMs: config.DB_POOL_IDLE_TIMEOUT_MS });
// In the background, never holding up the start: a MySQL that is down now is checked when it answers.
void checkConnectionBudget(config, 'worker', logger);

const worker = new OrderWorker(
  { redis, prisma, prefix: config.REDIS_PREFIX, logger, observer: metrics.observer },
  {
    batchSize: config.WORKER_BATCH_SIZE,
    idleMs: config.WORKER_IDLE_MS,
    batchWaitMs: config.WORKER_BATCH_WAIT_MS,
    claimIdleMs: config.WORKER_CLAIM_IDLE_MS,
    maxDeliveries: config.WORKER_MAX_DELIVERIES,
    salesRefreshMs: config.WORKER_SALES_REFRESH_MS,
    writesInFlight: config.WORKER_WRITES_IN_FLIGHT,
    sweepMs: config.WORKER_SWEEP_MS,
    sweepPerSecond: config.WORKER_SWEEP_PER_SECOND,
  },
);
// The gateways' "work waiting" signal, on a connection of its own (a subscribed connection runs nothing
// else). Not awaited: with Redis away the worker starts all the same, and the sweep reads every sale.
const subscriber = connectRedis(redisTargetOf(config), { connectionName: 'worker-signals', maxRetriesPerRequest: null });
subscriber.on('error', () => undefined);
void listenForWork(subscriber, config.REDIS_PREFIX, { onSale: (saleId) => worker.signal(saleId), onResubscribed: () => worker.sweepAll() }).catch((err: unknown) =>
  logger.warn({ err }, 'not subscribed to work signals yet; ioredis subscribes when Redis answers'),
);
metrics.watch(worker);
const expiry = new OrderExpiry(
  { redis, prisma, prefix: config.REDIS_PREFIX, logger },
  { everyMs: config.EXPIRY_SWEEP_MS, batchSize: config.EXPIRY_BATCH_SIZE },
  metrics.expiryObserver,
);
// Served before anything waits for Redis or MySQL: /healthz answers while either is away, /readyz says so.
// A port already taken (a second worker on the host with the default) is logged, and the worker goes on.
const readiness = readinessProbe({ redis: () => redis.ping(), mysql: () => prisma.$queryRaw`SELECT 1` });
const { server, port } = await serveMetricsPort(metrics.registry, config.WORKER_PORT, { logger, role: 'worker', variable: 'WORKER_PORT', config, readiness });

// Before the warm-up, which waits up to 2 s for a store that is away: a signal then is handled too.
onShutdownSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  subscriber.disconnect();
  const stopped = Promise.all([worker.stop(), expiry.stop()]);
  if (redis.status === 'ready') {
    await stopped;
    await redis.quit();
  } else {
    // Redis is away: the round in hand waits on commands queued for its return (each up to
    // REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, past the shutdown deadline), and nothing it holds could be
    // acknowledged anyway. Those entries stay pending and another worker takes them over, finding
    // written any batch whose commit came before the exit: the same as a crash, which loses nothing.
    logger.warn({ heldEntries: worker.heldEntries() }, 'Redis is away: stopping without waiting for the round in hand');
    redis.disconnect();
  }
  logger.info({ ...worker.stats, ...expiry.totals }, 'worker totals');
  if (port !== undefined) server.close();
  await prisma.$disconnect();
});
await warmUp();
worker.start();
expiry.start();
logger.info({ consumer: worker.consumer, prefix: config.REDIS_PREFIX, port }, 'worker started');
// In the background, once Redis answers: an evicting maxmemory-policy stops the process (redis-memory.ts).
void refuseEvictingRedis(redis, logger);

/**
 * Opens the connections (and loads Prisma's query compiler, which it does on the first query) before
 * the first batch, so that "worker started" means both stores answered and the first batch does not pay
 * for it. A store that is down does not stop the start: the loop retries until it is back.
 */
async function warmUp(): Promise<void> {
  const within = <T>(promise: Promise<T>, what: string) =>
    Promise.race([promise.then(() => undefined), sleep(2000).then(() => Promise.reject(new Error(`${what} did not answer within 2 s`)))]).catch((err: unknown) =>
      logger.warn({ err }, `${what} not reachable at start; the worker will retry`),
    );
  await Promise.all([within(redis.ping(), 'Redis'), within(checkServerSettings(), 'MySQL')]);
}

/**
 * Server settings the order writer relies on, checked once and logged (not changed: they are the
 * server's). Strict mode, the default of MySQL 5.7+ and MariaDB 10.2.4+: a value too long for its column
 * is refused rather than truncated with a warning (setting it per connection with the driver's initSql
 * made a connection attempt during an outage crash the process). innodb_autoinc_lock_mode 2, MySQL 8's
 * default: under 1 (MariaDB's) the writer's INSERT ... SELECT holds a table-level lock on orders for the
 * whole statement, so different sales' batches insert one at a time.
 */
async function checkServerSettings(): Promise<void> {
  const [row] = await prisma.$queryRaw<{ mode: string; autoinc: number | bigint }[]>`SELECT @@SESSION.sql_mode AS mode, @@innodb_autoinc_lock_mode AS autoinc`;
  if (!/STRICT_(TRANS|ALL)_TABLES/.test(row?.mode ?? '')) {
    logger.error({ sqlMode: row?.mode }, 'MySQL is not in strict mode: a value too long for its column would be truncated, not refused; add STRICT_TRANS_TABLES to sql_mode');
  }
  if (row && Number(row.autoinc) !== 2) {
    logger.info({ innodbAutoincLockMode: Number(row.autoinc) }, 'innodb_autoinc_lock_mode is not 2: order batches of different sales insert one at a time (2 recommended)');
  }
}
