import type { Logger } from '@flashsale/runtime';
import type { ReconcileReason } from '@flashsale/jobs';
import { mysqlServerIdentity, type PrismaClient } from '@flashsale/order-store';
import { mysqlServerKey, type ScriptedRedis } from '@flashsale/redis-store';

export interface MysqlServerWatchDeps {
  redis: ScriptedRedis;
  prisma: PrismaClient;
  prefix: string;
  logger: Logger;
  requestReconcile(saleId: number, reason: ReconcileReason): Promise<void>;
}

/**
 * Notices MySQL replaced by another server: an asynchronous replica promoted behind its primary lacks its
 * last commits, for every sale at once. The audit sees each sale's drift only once nothing of it is in
 * flight, which a sale bought without a pause may not offer for minutes; the server's identity says it at
 * the first look. Every live sale is then reconciled (its orders MySQL lacks written again from Redis's
 * records, see reconcile-sale.ts); a sale that lost nothing pauses for its drain and resumes.
 *
 * The identity last seen is kept in Redis, which does not go back with MySQL, and written only once the
 * reconciliations are queued: a reconciler that dies in between finds the change again. None recorded
 * (the first look, or Redis lost it) is recorded without a judgement. Returns whether the server changed.
 */
export async function watchMysqlServer(deps: MysqlServerWatchDeps, liveSaleIds: readonly number[]): Promise<boolean> {
  const key = mysqlServerKey(deps.prefix);
  const [now, seen] = await Promise.all([mysqlServerIdentity(deps.prisma), deps.redis.get(key)]);
  if (seen === now) return false;
  const changed = seen !== null;
  if (changed) {
    deps.logger.error({ was: seen, now, sales: liveSaleIds.length }, 'MySQL is another server than the one last seen (a replica promoted?): reconciling every live sale');
    for (const saleId of liveSaleIds) await deps.requestReconcile(saleId, 'mysql_changed');
  }
  await deps.redis.set(key, now);
  return changed;
}
