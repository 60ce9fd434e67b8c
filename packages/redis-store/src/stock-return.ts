import type { SaleRef } from './store-ref.ts';
import { chunksOf } from './chunks.ts';
import { hashPages } from './hash-scan.ts';

/**
 * Giving the units of closed orders back to a sale's Redis state (lua/return-units-4.lua), and the
 * record of what was given back in this generation (`returned` in keys.ts). MySQL has already closed the
 * orders; this is the Redis half, safe to repeat.
 */

/** A closed order whose units go back on sale. */
export interface UnitsToReturn {
  reservationId: string;
  userId: string;
  quantity: number;
}

/** What became of one call, per order in the order given. */
export type ReturnOutcome =
  /** The sale is not in Redis (its data was lost): the rebuild that restores it counts these units. */
  | { kind: 'absent' }
  /** Redis holds another generation than the orders closed in; `current` is the one it holds. */
  | { kind: 'other-generation'; current: string }
  | { kind: 'applied'; results: ReturnResult[] };

/** `returned` now, `already` returned before (a repeat), or `refused` (it would put remaining above stock). */
export type ReturnResult = 'returned' | 'already' | 'refused';

const RESULT_OF: Record<number, ReturnResult> = { 1: 'returned', 0: 'already', [-3]: 'refused' };

/** Orders per script call: a few hundred keep each call well under a millisecond of Redis's time. */
const ORDERS_PER_CALL = 200;

/** Gives back the units of `orders`, all closed while the sale's Redis state was `generation`. */
export async function returnUnits({ redis, keys }: SaleRef, generation: string, orders: UnitsToReturn[]): Promise<ReturnOutcome> {
  const results: ReturnResult[] = [];
  for (const chunk of chunksOf(orders, ORDERS_PER_CALL)) {
    const reply = await redis.returnUnits(
      keys.meta,
      keys.buyers,
      keys.returned,
      keys.closed,
      generation,
      ...chunk.flatMap((o) => [o.reservationId, o.userId, o.quantity]),
    );
    const code = Number(reply[0]);
    if (code === -1) return { kind: 'absent' };
    if (code === -2) return { kind: 'other-generation', current: String(reply[1]) };
    for (const c of reply.slice(1)) results.push(RESULT_OF[Number(c)] ?? 'refused');
  }
  return { kind: 'applied', results };
}

/**
 * The reservations whose units this generation of the sale's state gave back (its returned hash), a page
 * (HSCAN COUNT `pageSize`) at a time.
 */
export async function* returnedReservationPages({ redis, keys }: SaleRef, pageSize: number): AsyncGenerator<string[]> {
  for await (const flat of hashPages(redis, keys.returned, pageSize)) yield flat.filter((_, i) => i % 2 === 0);
}
