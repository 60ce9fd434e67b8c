import { ReserveCode } from '@flashsale/domain';
import type { ReserveReply } from './scripts.ts';
import type { StoreRef } from './store-ref.ts';
import { saleKeys, type SaleKeys } from './keys.ts';
import { parseBuyerRecord } from './buyer-record.ts';

/** What the reserve script decided; one variant per return code of reserve-6.lua (ReserveCode). */
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

/** One purchase, as the reserve script takes it. */
export interface PurchaseRequest {
  saleId: number;
  userId: string;
  quantity: number;
  reservationId: string;
}

/** The reserve script's keys and arguments, in the order it reads them (its KEYS, then its ARGV). */
export function reserveArgs(keys: SaleKeys, userId: string, quantity: number, reservationId: string) {
  return [keys.meta, keys.buyers, keys.stream, keys.turns, keys.closed, keys.showUp, userId, quantity, reservationId] as const;
}

/** The ReserveCode of a reply of the reserve script, as the number it is (a refusal's may be one the script does not define). */
export function reserveCodeOf(reply: ReserveReply): number {
  return typeof reply === 'number' ? ReserveCode.Reserved : reply[0];
}

/** Maps the script's reply to an outcome (pure; tested without Redis). */
export function toReserveOutcome(reply: ReserveReply): ReserveOutcome {
  if (typeof reply === 'number') return { kind: 'reserved', remaining: reply };
  const [code, value] = reply;
  // A number the script does not define falls through to the default.
  switch (code as ReserveCode) {
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
 * Replicas that must hold a reservation before it is answered (Redis WAIT), and how long to wait for
 * them: REDIS_WAIT_REPLICAS and REDIS_WAIT_TIMEOUT_MS.
 */
export interface ReplicaWait {
  replicas: number;
  timeoutMs: number;
}

/**
 * The whole purchase decision: exactly one Redis round trip (EVALSHA), which checks, takes the stock,
 * records the buyer and enqueues the reservation atomically.
 *
 * With `wait`, WAIT follows the script in the same round trip and on the same connection: it counts the
 * replicas that hold every write this connection made, the reservation's included, and on a cluster it
 * goes, with the script, to the master of the sale's slot. A reservation fewer replicas acknowledged in
 * time is `unreplicated`: it stands on the primary (and becomes an order unless the primary is lost
 * before a replica copies it), but a failover now could lose it, so it is not answered 202.
 */
export async function reservePurchase(store: StoreRef, request: PurchaseRequest): Promise<ReserveOutcome>;
export async function reservePurchase(
  store: StoreRef,
  request: PurchaseRequest,
  wait: ReplicaWait | undefined,
): Promise<ReserveOutcome | UnreplicatedOutcome>;
export async function reservePurchase(
  { redis, prefix }: StoreRef,
  request: PurchaseRequest,
  wait?: ReplicaWait,
): Promise<ReserveOutcome | UnreplicatedOutcome> {
  const keys = saleKeys(prefix, request.saleId);
  const args = reserveArgs(keys, request.userId, request.quantity, request.reservationId);
  if (!wait) return toReserveOutcome(await redis.reserve(...args));
  const pipeline = redis.pipeline() as unknown as WaitPipeline;
  const [[scriptError, reply], [waitError, acknowledged]] = (await pipeline
    .reserve(...args)
    .wait(wait.replicas, wait.timeoutMs)
    .exec()) as [[Error | null, unknown], [Error | null, unknown]];
  if (scriptError) throw scriptError;
  const outcome = toReserveOutcome(reply as ReserveReply);
  if (outcome.kind !== 'reserved') return outcome;
  if (waitError || Number(acknowledged) < wait.replicas)
    return { kind: 'unreplicated', acknowledged: waitError ? 0 : Number(acknowledged) };
  return outcome;
}

/** A reservation made on the primary that fewer than REDIS_WAIT_REPLICAS replicas acknowledged in time. */
export interface UnreplicatedOutcome {
  kind: 'unreplicated';
  acknowledged: number;
}

interface WaitPipeline {
  reserve(...args: readonly (string | number)[]): WaitPipeline;
  wait(replicas: number, timeoutMs: number): WaitPipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}
