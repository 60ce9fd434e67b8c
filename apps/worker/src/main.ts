import { createLogger, loadConfig, onShutdownSignal } from '@flashsale/config';
import { createRedis } from '@flashsale/redis-store';
import { createPrisma } from '@flashsale/order-store';
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
  },
);
worker.start();
logger.info({ consumer: worker.consumer, prefix: config.REDIS_PREFIX }, 'worker started');

onShutdownSignal(logger, async () => {
  await worker.stop();
  logger.info({ ...worker.stats }, 'worker totals');
  await redis.quit();
  await prisma.$disconnect();
});
