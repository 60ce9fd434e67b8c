import type { RebuyRule } from '@flashsale/domain';
import type { SaleRef } from './store-ref.ts';
import { chunksOf } from './chunks.ts';

/**
 * The state of a sale's rebuy rule in Redis (`closed` in keys.ts; lua/includes/buyer-history.lua says the
 * format and the rule): each buyer's closed orders, counted by return-units-4.lua as their units come
 * back, judged by reserve.lua; and its restoration from MySQL after a rebuild (restore-closed-2.lua).
 */

/** A buyer's closed (cancelled or expired) orders in one sale. */
export interface BuyerClosedOrders {
  userId: string;
  closedOrders: number;
  /** When the last one closed, epoch ms. */
  lastClosedAt: number;
}

/** The rule in the order publish-sale-2.lua (ARGV[15..16]) takes it; '' for a sale defined without one. */
export function rebuyRuleArgs(rule: RebuyRule | undefined): (string | number)[] {
  return rule ? [rule.maxOrdersPerBuyer, rule.rebuyCooldownSeconds] : ['', ''];
}

/** Buyers per script call: a few hundred keep each call well under a millisecond of Redis's time. */
const BUYERS_PER_CALL = 200;

/**
 * Writes the rule and merges `buyers` into the sale's closed hash (each buyer keeps the record with the
 * larger count, Redis's own on a tie); 'absent' when the sale is not in Redis.
 */
export async function restoreClosedOrders(
  { redis, keys }: SaleRef,
  rule: RebuyRule,
  buyers: BuyerClosedOrders[],
): Promise<'restored' | 'absent'> {
  // One call even without buyers: the rule is written all the same.
  for (const page of buyers.length === 0 ? [[]] : chunksOf(buyers, BUYERS_PER_CALL)) {
    const reply = await redis.restoreClosed(
      keys.meta,
      keys.closed,
      rule.maxOrdersPerBuyer,
      rule.rebuyCooldownSeconds,
      ...page.flatMap((b) => [b.userId, b.closedOrders, b.lastClosedAt]),
    );
    if (reply === -1) return 'absent';
  }
  return 'restored';
}

/** A buyer's closed orders as the sale's Redis state counts them (none: null). */
export async function readClosedOrders({ redis, keys }: SaleRef, userId: string): Promise<BuyerClosedOrders | null> {
  const record = await redis.hget(keys.closed, userId);
  if (record === null) return null;
  const [closedOrders, lastClosedAt] = record.split('|').map(Number);
  return { userId, closedOrders: closedOrders!, lastClosedAt: lastClosedAt! };
}
