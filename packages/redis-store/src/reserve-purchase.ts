import { ReserveCode } from '@flashsale/domain';
import type { ReserveArgs, ReserveReply } from './scripts.ts';
import type { StoreRef } from './store-ref.ts';
import { saleKeys, type SaleKeys } from './keys.ts';
import { parseBuyerRecord } from './buyer-record.ts';

/** What the reserve script decided; one variant per return code of reserve.lua (ReserveCode). */
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

/** How many keys a sale's reserve call passes (reserve.lua): an open sale's 3, the rebuy rule's 4th, the door's 5th and 6th. */
export type ReserveKeyCount = 3 | 4 | 6;

/** The reserve script's arguments, in the order it reads them: the number of keys, its KEYS, then its ARGV. */
export function reserveArgs(
  keys: SaleKeys,
  userId: string,
  quantity: number,
  reservationId: string,
  numberOfKeys: ReserveKeyCount = 6,
): ReserveArgs {
  if (numberOfKeys === 3) return [3, keys.meta, keys.buyers, keys.stream, userId, quantity, reservationId];
  if (numberOfKeys === 4) return [4, keys.meta, keys.buyers, keys.stream, keys.closed, userId, quantity, reservationId];
  return [6, keys.meta, keys.buyers, keys.stream, keys.closed, keys.turns, keys.showUp, userId, quantity, reservationId];
}

/**
 * The keys each sale needed beyond an open sale's 3, by its meta key, as this process last learned them
 * from the script. Only grows (a sale's door or rebuy rule may come while it sells; one that goes costs
 * a key or two a call, never a wrong answer), and holds only sales whose terms asked for more.
 */
const keysNeeded = new Map<string, 4 | 6>();

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
    case ReserveCode.NeedsKeys:
      throw new Error(`reserve script needs ${value} keys for this sale: reservePurchase passes them`);
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
 * The whole purchase decision: one Redis round trip (EVALSHA), which checks, takes the stock, records
 * the buyer and enqueues the reservation atomically. It passes the keys the sale has needed so far: an
 * open sale's 3 (each key costs Redis about 1,100 instructions a call); the first call of this process
 * for a sale behind the door, or one where an order was closed, is answered "needs n keys" before
 * anything is written and made again with them (keysNeeded).
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
  let numberOfKeys: ReserveKeyCount = keysNeeded.get(keys.meta) ?? 3;
  // At most twice more: a sale's terms ask for 4 keys, then (its door opened meanwhile) 6.
  for (;;) {
    const args = reserveArgs(keys, request.userId, request.quantity, request.reservationId, numberOfKeys);
    let reply: ReserveReply;
    let acknowledged = 0;
    if (!wait) reply = await redis.reserve(...args);
    else {
      const pipeline = redis.pipeline() as unknown as WaitPipeline;
      const [[scriptError, answer], [waitError, replicas]] = (await pipeline
        .reserve(...args)
        .wait(wait.replicas, wait.timeoutMs)
        .exec()) as [[Error | null, unknown], [Error | null, unknown]];
      if (scriptError) throw scriptError;
      reply = answer as ReserveReply;
      acknowledged = waitError ? 0 : Number(replicas);
    }
    if (typeof reply !== 'number' && (reply[0] as ReserveCode) === ReserveCode.NeedsKeys) {
      const needed = Number(reply[1]);
      if ((needed !== 4 && needed !== 6) || needed <= numberOfKeys)
        throw new Error(`reserve script asked for ${reply[1]} keys after a call given ${numberOfKeys}`);
      keysNeeded.set(keys.meta, needed);
      numberOfKeys = needed;
      continue;
    }
    const outcome = toReserveOutcome(reply);
    if (outcome.kind !== 'reserved' || !wait) return outcome;
    if (acknowledged < wait.replicas) return { kind: 'unreplicated', acknowledged };
    return outcome;
  }
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
