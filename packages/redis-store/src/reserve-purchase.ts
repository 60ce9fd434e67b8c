import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { parseBuyerRecord } from './sale-state.ts';

export interface PurchaseRequest {
  saleId: number;
  userId: string;
  quantity: number;
  reservationId: string;
}

/** What the reserve script decided; one variant per return code of reserve-3.lua. */
export type ReserveOutcome =
  | { kind: 'reserved'; remaining: number }
  | { kind: 'sale_not_found' }
  | { kind: 'sale_ended' }
  | { kind: 'sale_paused' }
  | { kind: 'sale_not_started' }
  | { kind: 'above_limit'; limit: number }
  | { kind: 'already_purchased'; reservationId: string; quantity: number }
  | { kind: 'sold_out' }
  | { kind: 'insufficient_stock'; remaining: number };

/** Maps the script's reply to an outcome (pure; tested without Redis). */
export function toReserveOutcome([code, value]: [number, string | number]): ReserveOutcome {
  switch (code) {
    case 1:
      return { kind: 'reserved', remaining: Number(value) };
    case -1:
      return { kind: 'sale_not_found' };
    case -2:
      return { kind: 'sale_ended' };
    case -3:
      return { kind: 'sale_paused' };
    case -4:
      return { kind: 'sale_not_started' };
    case -5:
      return { kind: 'above_limit', limit: Number(value) };
    case -6:
      return { kind: 'already_purchased', ...parseBuyerRecord(String(value)) };
    case -7:
      return { kind: 'sold_out' };
    case -8:
      return { kind: 'insufficient_stock', remaining: Number(value) };
    default:
      throw new Error(`reserve script returned an unknown code ${code}`);
  }
}

/**
 * The whole purchase decision: exactly one Redis round trip (EVALSHA), which checks, takes the stock,
 * records the buyer and enqueues the reservation atomically.
 */
export async function reservePurchase(redis: ScriptedRedis, prefix: string, request: PurchaseRequest): Promise<ReserveOutcome> {
  const keys = saleKeys(prefix, request.saleId);
  const reply = await redis.reserve(keys.meta, keys.buyers, keys.stream, request.userId, request.quantity, request.reservationId);
  return toReserveOutcome(reply);
}
