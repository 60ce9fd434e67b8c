import type { Config } from '@flashsale/config';
import type { Logger, Readiness } from '@flashsale/runtime';
import type { Sales } from '@flashsale/sales';

/**
 * What the gateway is given, so a test can build it around its own prefix and database: the use cases
 * (packages/sales, built once by packages/bootstrap) and what is truly the HTTP process's own.
 */
export interface GatewayDeps {
  config: Config;
  /** The use cases over the buyers' MySQL pool (GATEWAY_DB_POOL_SIZE) and Redis. */
  sales: Sales;
  /**
   * The use cases over the dashboard's own MySQL pool (DASHBOARD_DB_POOL_SIZE): its live views read
   * through it alone, so however many pages watch, they never wait for, nor hold, a connection a buyer's
   * request needs.
   */
  dashboardSales: Sales;
  logger: Logger;
  /** Whether Redis and MySQL answer now (`/readyz`). */
  readiness: () => Promise<Readiness>;
  /**
   * A monotonic clock in ms for the rate-limit windows and the verdict cache's TTL, default
   * `performance.now()`; a test passes one it moves by hand instead of waiting for the next second.
   */
  now?: () => number;
  /** True once the process is stopping (SIGTERM): /readyz answers 503 so a load balancer stops sending. */
  stopping?: () => boolean;
}
