import type { Config } from '@flashsale/config';
import type { Logger } from '@flashsale/runtime';
import { createSaleStore, type ScriptedRedis } from '@flashsale/redis-store';
import type { PrismaClient } from '@flashsale/order-store';
import type { ReconcileJobs } from '@flashsale/jobs';
import { createSales, type Sales, type SalesOptions } from '@flashsale/sales';

/** What the use cases take from the configuration (see SalesOptions). */
export function salesOptionsOf(config: Config): SalesOptions {
  return {
    databaseUrl: config.DATABASE_URL,
    publishTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
    drainTimeoutMs: config.RECONCILE_DRAIN_TIMEOUT_MS,
  };
}

/**
 * The application layer's facade over a process's connections: the one an app calls (packages/sales).
 * Redis is bound here to the deployment's key prefix (REDIS_PREFIX).
 */
export function salesOf(
  config: Config,
  logger: Logger,
  stores: { redis: ScriptedRedis; prisma: PrismaClient; jobs?: ReconcileJobs },
): Sales {
  const { redis, prisma, jobs } = stores;
  return createSales({ saleStore: createSaleStore(redis, config.REDIS_PREFIX), prisma, jobs, logger, options: salesOptionsOf(config) });
}
