import type { Counter, Registry } from 'prom-client';
import { metricsOn } from './metric-definitions.ts';

/**
 * The Redis and MySQL error counters every process exports under the same names, so one alert rule and
 * one dashboard panel cover the gateway, the workers and the reconciler alike (Prometheus's `job` label
 * tells them apart).
 */
export interface StoreErrorMetrics {
  redis: Counter;
  mysql: Counter;
  /** Transactions MySQL rolled back as a conflict's loser (deadlock, Galera certification), run again; by operation. */
  mysqlConflicts: Counter;
  /**
   * Counts `error` under the store it names, as `isRedisUnavailable` / `isMysqlUnavailable` judge it;
   * anything else (a bug, bad data) is not a store's error and is not counted here. Returns the store.
   */
  count(error: unknown): 'redis' | 'mysql' | undefined;
}

/** How a process tells a store's failure from any other: the store packages' own classifiers. */
export interface StoreErrorClassifiers {
  isRedisUnavailable(error: unknown): boolean;
  isMysqlUnavailable(error: unknown): boolean;
  /** Conflicts met so far by this process, by operation (counted where the transaction is run again). */
  mysqlConflictsSoFar(): ReadonlyMap<string, number>;
}

export function createStoreErrorMetrics(registry: Registry, classify: StoreErrorClassifiers): StoreErrorMetrics {
  const { counter } = metricsOn(registry);
  const redis = counter(
    'flashsale_redis_errors_total',
    'Redis failures this process met: its connection lost or refused, or a command that timed out or that Redis could not serve (loading, busy, out of memory, failing over).',
  );
  const mysql = counter(
    'flashsale_mysql_errors_total',
    'MySQL failures this process met: a statement that could not be run or finished (connection lost or refused, timeout, lock wait, deadlock); each was answered 503 or retried.',
  );
  const mysqlConflicts = counter(
    'flashsale_mysql_conflicts_total',
    'Transactions MySQL rolled back because another won (1213: an InnoDB deadlock, or on Galera a certification conflict at COMMIT), run again at once; by operation (order_batch, expiry, payment, cancel). On one Galera writer, they come when the writer changes.',
    ['operation'],
    function () {
      this.reset();
      for (const [operation, count] of classify.mysqlConflictsSoFar()) this.inc({ operation }, count);
    },
  );
  return {
    redis,
    mysql,
    mysqlConflicts,
    count(error) {
      if (classify.isRedisUnavailable(error)) {
        redis.inc();
        return 'redis';
      }
      if (classify.isMysqlUnavailable(error)) {
        mysql.inc();
        return 'mysql';
      }
      return undefined;
    },
  };
}
