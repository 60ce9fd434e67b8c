import { ReserveCode } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { parseBuyerRecord } from './buyer-record.ts';

export interface PurchaseRequest {
  saleId: number;
  userId: string;
  quantity: number;
  reservationId: string;
}

/** What the reserve script decided; one variant per return code of reserve-5.lua (ReserveCode). */
export type ReserveOutcome =
  | { kind: 'reserved'; remaining: number }
  | { kind: 'sale_not_found' }
  | { kind: 'sale_ended' }
  | { kind: 'sale_paused' }
  | { kind: 'sale_not_started' }
  | { kind: 'above_limit'; limit: number }
  | { kind: 'already_purchased'; reservationId: string; quantity: number }
  | { kind: 'sold_out' }
  | { kind: 'insufficient_stock'; remaining: number }
  | { kind: 'not_admitted' }
  | { kind: 'rebuy_cooldown'; waitMs: number }
  | { kind: 'order_limit_reached'; maxOrders: number };

/** Maps the script's reply to an outcome (pure; tested without Redis). */
export function toReserveOutcome([code, value]: [number, string | number]): ReserveOutcome {
  // A number the script does not define falls through to the default.
  switch (code as ReserveCode) {
    case ReserveCode.Reserved:
      return { kind: 'reserved', remaining: Number(value) };
    case ReserveCode.SaleNotFound:
      return { kind: 'sale_not_found' };
    case ReserveCode.SaleEnded:
      return { kind: 'sale_ended' };
    case ReserveCode.SalePaused:
      return { kind: 'sale_paused' };
    case ReserveCode.SaleNotStarted:
      return { kind: 'sale_not_started' };
    case ReserveCode.AboveLimit:
      return { kind: 'above_limit', limit: Number(value) };
    case ReserveCode.AlreadyPurchased:
      return { kind: 'already_purchased', ...parseBuyerRecord(String(value)) };
    case ReserveCode.SoldOut:
      return { kind: 'sold_out' };
    case ReserveCode.InsufficientStock:
      return { kind: 'insufficient_stock', remaining: Number(value) };
    case ReserveCode.NotAdmitted:
      return { kind: 'not_admitted' };
    case ReserveCode.RebuyCooldown:
      return { kind: 'rebuy_cooldown', waitMs: Number(value) };
    case ReserveCode.OrderLimitReached:
      return { kind: 'order_limit_reached', maxOrders: Number(value) };
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
  const reply = await redis.reserve(keys.meta, keys.buyers, keys.stream, keys.turns, keys.closed, request.userId, request.quantity, request.reservationId);
  return toReserveOutcome(reply);
}
