import { isMysqlUnavailable, mysqlConflictsSoFar } from '@flashsale/order-store';
import { isRedisUnavailable } from '@flashsale/redis-store';

/**
 * Which of the two stores a failure says is away or too slow (a lost connection, a command or statement
 * past its deadline), as each store judges its own: what the apps turn into a 503, a metric, or words on
 * the dashboard, without reaching into both stores themselves. `mysqlConflictsSoFar`: the transactions
 * MySQL refused as a conflict's loser and that ran again (order-store's retryOnConflict), by operation.
 */
export const storeFailures = { isRedisUnavailable, isMysqlUnavailable, mysqlConflictsSoFar } as const;

/** Whether either store is away or too slow: the failure of a whole round, never one sale's. */
export function isStoreUnavailable(error: unknown): boolean {
  return isRedisUnavailable(error) || isMysqlUnavailable(error);
}
