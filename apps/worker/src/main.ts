import { createLogger, loadConfig, onShutdownSignal } from '@flashsale/config';
import { createRedis } from '@flashsale/redis-store';
import { createPrisma } from '@flashsale/order-store';
import { setTimeout as sleep } from 'node:timers/promises';
import { OrderWorker } from './order-worker.ts';

const config = loadConfig();
const logger = createLogger('worker', config.LOG_LEVEL);
// No per-command retry limit: the worker's own loop retries, and an entry is never dropped for it.
const redis = createRedis(config.REDIS_URL, { name: 'worker', onError: (err) => logger.warn({ err }, 'redis connection error'), maxRetriesPerRequest: null });
const prisma = createPrisma(config.DATABASE_URL, config.DB_POOL_SIZE);

const worker = new OrderWorker(
  { redis, prisma, prefix: config.REDIS_PREFIX, logger },
  {
    batchSize: config.WORKER_BATCH_SIZE,
    idleMs: config.WORKER_IDLE_MS,
    claimIdleMs: config.WORKER_CLAIM_IDLE_MS,
    maxDeliveries: config.WORKER_MAX_DELIVERIES,
    salesRefreshMs: 1000,
    writesInFlight: config.WORKER_WRITES_IN_FLIGHT,
  },
);
await warmUp();
worker.start();
logger.info({ consumer: worker.consumer, prefix: config.REDIS_PREFIX }, 'worker started');

onShutdownSignal(logger, async () => {
  await worker.stop();
  logger.info({ ...worker.stats }, 'worker totals');
  await redis.quit();
  await prisma.$disconnect();
});

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
  await Promise.all([within(redis.ping(), 'Redis'), within(prisma.$queryRaw`SELECT 1`, 'MySQL')]);
}
