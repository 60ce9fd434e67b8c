import type { Logger } from '@flashsale/runtime';
import type { OrderStore } from '@flashsale/order-store';
import type { SaleStore } from '@flashsale/redis-store';

/**
 * What every use case of both stores is given: each store bound once to its client (and Redis's to the
 * key prefix), and the log. Made once, by createSales (sales.ts).
 */
export interface SalesDeps {
  /** Redis, bound to its client and key prefix (createSaleStore). */
  redis: SaleStore;
  /** MySQL: createOrderStore(prisma). */
  mysql: OrderStore;
  logger: Logger;
}
