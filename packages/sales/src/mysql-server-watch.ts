import type { ReconcileReason } from '@flashsale/jobs';
import { mysqlServerIdentity } from '@flashsale/order-store';
import { lastSeenMysqlServer, recordMysqlServerSeen } from '@flashsale/redis-store';
import type { SalesDeps } from './sales-deps.ts';

export interface MysqlServerWatchDeps extends SalesDeps {
  requestReconcile(saleId: number, reason: ReconcileReason): Promise<void>;
}

/**
 * Notices MySQL replaced by another server: an asynchronous replica promoted behind its primary lacks its
 * last commits, for every sale at once. The audit sees each sale's drift only once nothing of it is in
 * flight, which a sale bought without a pause may not offer for minutes; the server's identity says it at
 * the first look. Every live sale is then reconciled (its orders MySQL lacks written again from Redis's
 * records, see sale-reconciliation.ts); a sale that lost nothing pauses for its drain and resumes.
 *
 * The identity last seen is kept in Redis, which does not go back with MySQL, and written only once the
 * reconciliations are queued: a reconciler that dies in between finds the change again. None recorded
 * (the first look, or Redis lost it) is recorded without a judgement. Returns whether the server changed.
 */
export async function watchMysqlServer(deps: MysqlServerWatchDeps, liveSaleIds: readonly number[]): Promise<boolean> {
  const [now, seen] = await Promise.all([mysqlServerIdentity(deps.prisma), lastSeenMysqlServer(deps.redis, deps.prefix)]);
  if (seen === now) return false;
  const changed = seen !== null;
  if (changed) {
    deps.logger.error({ was: seen, now, sales: liveSaleIds.length }, 'MySQL is another server than the one last seen (a replica promoted?): reconciling every live sale');
    for (const saleId of liveSaleIds) await deps.requestReconcile(saleId, 'mysql_changed');
  }
  await recordMysqlServerSeen(deps.redis, deps.prefix, now);
  return changed;
}
