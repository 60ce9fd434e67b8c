import type { Config, Logger } from '@flashsale/config';
import type { ScriptedRedis } from '@flashsale/redis-store';
import type { PrismaClient } from '@flashsale/order-store';

/** Everything the gateway talks to, passed in so a test can build the app around its own prefix and database. */
export interface GatewayDeps {
  config: Config;
  redis: ScriptedRedis;
  prisma: PrismaClient;
  logger: Logger;
}
