import { judgeMysqlServer } from '@flashsale/order-store';
import type { SaleWatch } from './sale-watch.ts';

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
 *
 * On a Galera cluster the identity is the cluster's state and its last committed seqno (judgeMysqlServer):
 * HAProxy moving the writer to another node is no change, and every round records the seqno it saw. Redis
 * is read before MySQL, so the seqno last recorded (by this reconciler or another) was read from MySQL
 * before this round's: a cluster that goes on never looks behind it.
 */
export async function watchMysqlServer(
  deps: Pick<SaleWatch, 'redis' | 'mysql' | 'logger' | 'requestReconcile'>,
  liveSaleIds: readonly number[],
): Promise<boolean> {
  const seen = await deps.redis.lastSeenMysqlServer();
  const now = await deps.mysql.serverIdentity();
  if (seen === now) return false;
  const changed = seen !== null && judgeMysqlServer(seen, now) === 'changed';
  if (changed) {
    deps.logger.error(
      { was: seen, now, sales: liveSaleIds.length },
      'MySQL is another server than the one last seen (a replica promoted, a Galera cluster bootstrapped from a node behind?): reconciling every live sale',
    );
    for (const saleId of liveSaleIds) await deps.requestReconcile(saleId, 'mysql_changed');
  }
  await deps.redis.recordMysqlServerSeen(now);
  return changed;
}
