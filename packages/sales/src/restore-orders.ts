import type { RejectReason, Reservation } from '@flashsale/domain';
import type { OrderStore } from '@flashsale/order-store';
import type { SaleRedis } from '@flashsale/redis-store';

/** Why a reservation Redis holds could not be written again as an order. */
export type RestoreRefusal = RejectReason | 'RECORD_WITHOUT_TIME';

/** What restoring a sale's orders from Redis did. */
export interface RestoreOutcome {
  /** Reservations MySQL lacked and now holds again, under their own ids. */
  restored: Reservation[];
  /** Reservations MySQL lacked and could not take (another generation, over stock, a buyer with another order). */
  refused: { reservationId: string; userId: string; quantity: number; reservedAt?: number; reason: RestoreRefusal }[];
}

/** Buyers per HSCAN page and per batch written. */
const PAGE = 1000;

/**
 * Writes again, as orders with their original reservation ids, the reservations Redis holds that MySQL
 * lost: MySQL went back in time (restored from a dump, or a replica promoted behind its primary) after
 * the workers had written and acknowledged them, and their stream entries may be trimmed since.
 *
 * Called by a reconciliation with the sale paused and its stream drained, so every buyer record of the
 * state is settled: an order, a dead letter, or (neither) a reservation MySQL has lost. The buyer's record
 * carries what a faithful order needs (id, quantity, the instant Redis accepted it, so payBy is the one
 * the buyer was promised); the generation is the state's own. They go through the order writer, with its
 * guards: a generation MySQL does not know, stock exhausted, a buyer who has another live order are
 * refused and reported (the caller counts them as lost), never forced in. Records without a time
 * (written before the time was kept) cannot be made faithful and are reported too.
 *
 * The rebuild that follows then counts them: remaining = stock - units in MySQL agrees with what Redis
 * had, and no unit of a reservation answered 202 is put back on sale.
 */
export async function restoreOrdersFromRedis(inRedis: SaleRedis, mysql: OrderStore): Promise<RestoreOutcome> {
  const { saleId } = inRedis;
  const outcome: RestoreOutcome = { restored: [], refused: [] };
  const generation = await inRedis.generation();
  if (generation === null) return outcome;
  for await (const page of inRedis.heldReservationPages(PAGE)) {
    if (page.length === 0) continue;
    const ids = page.map((held) => held.reservationId);
    const known = await mysql.reservationsWithOrders(ids);
    const setAside = await inRedis.areSetAside(ids);
    const missing: Reservation[] = [];
    page.forEach(({ reservationId, userId, quantity, reservedAt }, i) => {
      if (known.has(reservationId) || setAside[i]) return;
      if (reservedAt === undefined) outcome.refused.push({ reservationId, userId, quantity, reason: 'RECORD_WITHOUT_TIME' });
      else missing.push({ reservationId, saleId, userId, quantity, reservedAt, generation });
    });
    if (missing.length === 0) continue;
    const written = await mysql.sale(saleId).writeOrderBatch(missing);
    outcome.restored.push(...written.written);
    for (const { reservation, reason } of written.rejected) {
      const { reservationId, userId, quantity, reservedAt } = reservation;
      outcome.refused.push({ reservationId, userId, quantity, reservedAt, reason });
    }
  }
  return outcome;
}
