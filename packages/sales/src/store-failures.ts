import { isMysqlUnavailable } from '@flashsale/order-store';
import { isRedisUnavailable } from '@flashsale/redis-store';

/**
 * Which of the two stores a failure says is away or too slow (a lost connection, a command or statement
 * past its deadline), as each store judges its own: what the apps turn into a 503, a metric, or words on
 * the dashboard, without reaching into both stores themselves.
 */
export const storeFailures = { isRedisUnavailable, isMysqlUnavailable } as const;

/** Whether either store is away or too slow: the failure of a whole round, never one sale's. */
export function isStoreUnavailable(error: unknown): boolean {
  return isRedisUnavailable(error) || isMysqlUnavailable(error);
}
