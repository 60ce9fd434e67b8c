import type { Config } from '@flashsale/config';
import type { Logger } from '@flashsale/runtime';
import type { ScriptedRedis } from '@flashsale/redis-store';
import type { PrismaClient } from '@flashsale/order-store';
import type { ReconcileJobs } from '@flashsale/jobs';

/** Everything the gateway talks to, passed in so a test can build the app around its own prefix and database. */
export interface GatewayDeps {
  config: Config;
  redis: ScriptedRedis;
  /** The buyers' MySQL pool (GATEWAY_DB_POOL_SIZE): reservation lookups, sale reads, the admin API. */
  prisma: PrismaClient;
  /**
   * The dashboard's own MySQL pool (DASHBOARD_DB_POOL_SIZE): its live views read through it alone, so
   * however many pages watch, they never wait for, nor hold, a connection a buyer's request needs.
   */
  dashboardPrisma: PrismaClient;
  logger: Logger;
  /** The reconcile queue, for the admin endpoint that asks for a reconciliation and waits for it. */
  jobs: ReconcileJobs;
  /**
   * A monotonic clock in ms for the rate-limit windows and the verdict cache's TTL, default
   * `performance.now()`; a test passes one it moves by hand instead of waiting for the next second.
   */
  now?: () => number;
  /** True once the process is stopping (SIGTERM): /readyz answers 503 so a load balancer stops sending. */
  stopping?: () => boolean;
}
