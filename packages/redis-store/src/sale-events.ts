import type { Redis } from 'ioredis';
// On a cluster, PUBLISH reaches the subscribers of every node (see redis-target.ts).

/**
 * Pub/sub channel on which a sale's state changes are announced (a reconciliation paused, rebuilt or
 * resumed it). Gateways that cache a verdict about a sale (sold out, ended) drop it when they hear the
 * sale's id, so a reconcile that puts units back is never answered with a stale "sold out".
 */
export function saleEventsChannel(prefix: string): string {
  return `${prefix}:sale-events`;
}

/** Announces that a sale's state changed; the message is the sale id. */
export async function announceSaleChanged(redis: Redis, prefix: string, saleId: number): Promise<void> {
  await redis.publish(saleEventsChannel(prefix), String(saleId));
}
