import { saleEventsChannel } from './keys.ts';
import type { SaleRef } from './store-ref.ts';
// On a cluster, PUBLISH reaches the subscribers of every node (see redis-target.ts).

/**
 * Announces that a sale's state changed (a reconciliation paused, rebuilt or resumed it) on
 * `saleEventsChannel` (keys.ts); the message is the sale id. Gateways that cache a verdict about a sale
 * (sold out, ended) drop it when they hear it, so a reconcile that puts units back is never answered with
 * a stale "sold out".
 */
export async function announceSaleChanged({ redis, prefix, saleId }: SaleRef): Promise<void> {
  await redis.publish(saleEventsChannel(prefix), String(saleId));
}
