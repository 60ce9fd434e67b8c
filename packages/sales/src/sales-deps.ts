import type { Logger } from '@flashsale/runtime';
import type { PrismaClient } from '@flashsale/order-store';
import { createSaleStore, type SaleRedis, type ScriptedRedis } from '@flashsale/redis-store';

/** What every use case of both stores is given: the two stores, the Redis key prefix, the log. */
export interface SalesDeps {
  redis: ScriptedRedis;
  prisma: PrismaClient;
  /** REDIS_PREFIX: every key of the deployment starts with it. */
  prefix: string;
  logger: Logger;
}

/** The sale's Redis records, bound to the deployment's client and prefix. */
export function saleInRedis(deps: Pick<SalesDeps, 'redis' | 'prefix'>, saleId: number): SaleRedis {
  return createSaleStore(deps.redis, deps.prefix).sale(saleId);
}
