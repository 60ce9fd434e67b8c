import type { RebuyRule } from '@flashsale/domain';
import type { SalesDeps } from './sales-deps.ts';

/** Buyers read from MySQL per page: bounded memory and query time, whatever the sale's size. */
const BUYERS_PER_PAGE = 1000;

/**
 * The rebuy rule's state after a rebuild (the reconciler calls it once the sale's Redis state is
 * rewritten, before the sale resumes): the rule's terms and every buyer's closed orders, derived from
 * MySQL's cancelled and expired orders, merged into Redis page by page. Without it a Redis that lost its
 * data would let every buyer start over. Safe to repeat (the merge keeps the larger count); returns the
 * buyers written, or 'absent' when the sale is not in Redis (the rebuild's caller fails on that first).
 */
export async function restoreBuyerHistory(
  deps: Pick<SalesDeps, 'redis' | 'mysql'>,
  saleId: number,
  rule: RebuyRule,
): Promise<number | 'absent'> {
  const inRedis = deps.redis.sale(saleId);
  let after = '';
  let buyers = 0;
  for (;;) {
    const page = await deps.mysql.sale(saleId).closedOrdersPage(after, BUYERS_PER_PAGE);
    // MySQL's elapsed time put on Redis's clock, the one the reserve script judges the cooldown by.
    const now = await inRedis.now();
    const history = page.map((row) => ({ userId: row.userId, closedOrders: row.closedOrders, lastClosedAt: now - row.msSinceLastClosed }));
    if ((await inRedis.restoreClosedOrders(rule, history)) === 'absent') return 'absent';
    buyers += page.length;
    if (page.length < BUYERS_PER_PAGE) return buyers;
    after = page.at(-1)!.userId;
  }
}
