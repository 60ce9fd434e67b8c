import type { ScriptedRedis } from './scripts.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';

/** What trimAcknowledged keeps besides what is in flight; null: no such bound. */
export interface RetentionBounds {
  /** This entry and every later one (a checkpoint's entry). */
  keepFrom: string | null;
  /** Every entry added at or after this instant, epoch ms on Redis's clock (stream ids are its time). */
  keepSinceMs: number | null;
}

/**
 * Removes the entries of a sale's stream that the order writers have acknowledged and that neither bound
 * keeps, in one step (trim-acknowledged-1.lua): pending and undelivered entries always stay. Returns how
 * many were removed.
 */
export async function trimAcknowledged(redis: ScriptedRedis, prefix: string, saleId: number, { keepFrom, keepSinceMs }: RetentionBounds): Promise<number> {
  const since = keepSinceMs === null ? '' : String(Math.max(0, Math.floor(keepSinceMs)));
  return Number(await redis.trimAcknowledged(saleKeys(prefix, saleId).stream, ORDER_WRITERS_GROUP, keepFrom ?? '', since));
}
