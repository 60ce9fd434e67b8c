import type { SalesDeps } from './sales-deps.ts';

/** A reservation of the asking buyer that is not an order (yet, or ever). */
export type ReservationBeforeOrder =
  | { reservationId: string; saleId: number; quantity: number; status: 'pending' }
  | { reservationId: string; saleId: number; quantity: number; status: 'rejected' | 'lost'; reason: string };

/** What a buyer's lookup of a reservation finds: its order, what it is before (or instead of) one, or nothing. */
export type ReservationStatus =
  { kind: 'order'; quantity: number; status: string; payBy: Date } | { kind: 'before-order'; reservation: ReservationBeforeOrder } | null;

type Deps = Pick<SalesDeps, 'redis' | 'mysql'>;

/**
 * A buyer's reservation wherever it is: MySQL's order first (one indexed read), then, for an id MySQL has
 * no order of, Redis's records of it (the rejected hash, the buyers hash: at most two HGETs), then a named
 * loss (lost_reservations, one primary-key read). Someone else's reservation is null, as an unknown one is,
 * so ids cannot be probed. Reads only: nothing to converge after a crash.
 */
export async function findReservationStatus(deps: Deps, saleId: number, reservationId: string, userId: string): Promise<ReservationStatus> {
  const order = await deps.mysql.findOrderByReservation(reservationId);
  if (order) return order.userId === userId ? { kind: 'order', quantity: order.quantity, status: order.status, payBy: order.payBy } : null;
  const before = await findReservationBeforeOrder(deps, saleId, reservationId, userId);
  return before && { kind: 'before-order', reservation: before };
}

/**
 * A reservation of this buyer that is not an order: `rejected` (set aside by the workers), `pending` (on
 * its way) or `lost` (no store holds it any more and a reconciliation named it); null when the buyer holds
 * no such reservation (someone else's, or unknown).
 */
export async function findReservationBeforeOrder(
  deps: Deps,
  saleId: number,
  reservationId: string,
  userId: string,
): Promise<ReservationBeforeOrder | null> {
  return (await heldInRedis(deps, saleId, reservationId, userId)) ?? (await lostReservation(deps, reservationId, userId));
}

/** This buyer's reservation as Redis holds it: set aside by the workers, or on its way; null otherwise. */
async function heldInRedis(deps: Deps, saleId: number, reservationId: string, userId: string): Promise<ReservationBeforeOrder | null> {
  const inRedis = deps.redis.sale(saleId);
  const rejected = await inRedis.deadLetterOf(reservationId);
  if (rejected) {
    return rejected.userId === userId
      ? { reservationId, saleId, quantity: rejected.quantity, status: 'rejected', reason: rejected.reason }
      : null;
  }
  const held = await inRedis.reservationOf(userId);
  return held && held.reservationId === reservationId ? { reservationId, saleId, quantity: held.quantity, status: 'pending' } : null;
}

/** A named loss of this buyer (see lost_reservations), or null. */
async function lostReservation(deps: Deps, reservationId: string, userId: string): Promise<ReservationBeforeOrder | null> {
  const lost = await deps.mysql.findLostReservation(reservationId);
  return lost && lost.userId === userId
    ? { reservationId, saleId: lost.saleId, quantity: lost.quantity, status: 'lost', reason: lost.reason }
    : null;
}
