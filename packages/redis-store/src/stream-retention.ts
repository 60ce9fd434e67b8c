import type { ScriptedRedis } from './scripts.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';

/**
 * Removes the entries of a sale's stream that the order writers have acknowledged and that are older
 * than `keepFrom` (null: no such bound), in one step (trim-acknowledged-1.lua): pending and undelivered
 * entries always stay. Returns how many were removed.
 */
export async function trimAcknowledged(redis: ScriptedRedis, prefix: string, saleId: number, keepFrom: string | null): Promise<number> {
  return Number(await redis.trimAcknowledged(saleKeys(prefix, saleId).stream, ORDER_WRITERS_GROUP, keepFrom ?? ''));
}
