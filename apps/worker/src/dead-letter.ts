import type { RejectReason } from '@flashsale/order-store';
import { ORDER_WRITERS_GROUP, saleKeys, type ScriptedRedis } from '@flashsale/redis-store';
import type { RawEntry } from './stream-reader.ts';

/**
 * Why an entry was set aside instead of becoming an order. Operators find each in the sale's dead-letter
 * stream with its reason and original fields; the admin stats count them.
 */
export type DeadLetterReason = RejectReason | 'MALFORMED_ENTRY' | 'MAX_DELIVERIES' | 'WRITE_FAILED';

/**
 * Moves the entry to the dead-letter stream, records its reservation as rejected (for status lookups) and
 * acknowledges it, atomically (dead-letter-3.lua).
 */
export async function deadLetter(
  redis: ScriptedRedis,
  prefix: string,
  saleId: number,
  entry: RawEntry,
  reason: DeadLetterReason,
  deliveries: number,
): Promise<void> {
  const keys = saleKeys(prefix, saleId);
  await redis.deadLetter(keys.stream, keys.deadLetter, keys.rejected, ORDER_WRITERS_GROUP, entry.id, reason, deliveries, ...entry.fields);
}
