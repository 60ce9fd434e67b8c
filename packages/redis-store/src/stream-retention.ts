import type { SaleRef } from './store-ref.ts';
import { ORDER_WRITERS_GROUP } from './keys.ts';

/** What trimAcknowledged keeps besides what is in flight; null: no such bound. */
export interface RetentionBounds {
  /** This entry and every later one (a checkpoint's entry). */
  keepFrom: string | null;
  /** Every entry added at or after this instant, epoch ms on Redis's clock (stream ids are its time). */
  keepSinceMs: number | null;
  /**
   * `keepSinceMs` holds only while the stream holds at most this many entries (RECONCILER_STREAM_RETENTION_ENTRIES);
   * beyond, what is acknowledged goes whatever its age, down to `keepFrom` and what is in flight. Default null: no such bound.
   */
  maxEntries?: number | null;
}

/**
 * Removes the entries of a sale's stream that the order writers have acknowledged and that no bound
 * keeps, in one step (trim-acknowledged-1.lua): pending and undelivered entries always stay. After a
 * pass the stream holds at most max(maxEntries, the entries from the oldest of keepFrom and what is in
 * flight to its end): about what is in flight plus the entries since the checkpoint, at any accept
 * rate. Its cost follows the entries removed, and sends back one number. Returns how many were removed.
 */
export async function trimAcknowledged({ redis, keys }: SaleRef, bounds: RetentionBounds): Promise<number> {
  const { keepFrom, keepSinceMs, maxEntries = null } = bounds;
  const since = keepSinceMs === null ? '' : String(Math.max(0, Math.floor(keepSinceMs)));
  const most = maxEntries === null ? '' : String(Math.max(0, Math.floor(maxEntries)));
  return Number(await redis.trimAcknowledged(keys.stream, ORDER_WRITERS_GROUP, keepFrom ?? '', since, most));
}
