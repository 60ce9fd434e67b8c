import type { StoreRef } from './store-ref.ts';
import { mysqlServerKey } from './keys.ts';

/**
 * The identity of the MySQL server the reconciler last saw (order-store's mysqlServerIdentity), kept in
 * Redis: the store that does not go back with MySQL, so a reconciler started after a failover still knows
 * which server came before. Null when none is recorded (the first look, or Redis lost it).
 */
export async function lastSeenMysqlServer({ redis, prefix }: StoreRef): Promise<string | null> {
  return redis.get(mysqlServerKey(prefix));
}

/** Records `identity` as the MySQL server last seen (see lastSeenMysqlServer). */
export async function recordMysqlServerSeen({ redis, prefix }: StoreRef, identity: string): Promise<void> {
  await redis.set(mysqlServerKey(prefix), identity);
}
