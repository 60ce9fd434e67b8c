import { AppError } from '@flashsale/domain';
import type { OrderStore } from '@flashsale/order-store';

/** Named losses per page: `default` when the caller gives no limit, at most `max`. */
export const LOSSES_PAGE = { default: 100, max: 1000 } as const;

/** Unmatched payments shown with a page of losses: the first ones, and how many there are. */
const UNMATCHED_SHOWN = 100;

/** One page of what a sale lost: what GET /api/admin/sales/:id/losses and `npm run admin -- losses` show. */
export interface SaleLossesPage {
  saleId: number;
  /** Every reservation answered 202 and counted lost (sales.lost_reservations), named or not. */
  lost: { reservations: number; units: number };
  /** Of those, the ones known by id (lost_reservations): listed below, page by page. */
  named: { reservations: number; units: number };
  /**
   * Counted but not known by id: reservations Redis accepted after its last checkpoint and then lost
   * (a restart from an old snapshot, a failover to a stale replica) before any worker wrote them.
   * Nobody but their buyers knows their ids.
   */
  unnamed: { reservations: number; units: number };
  reservations: {
    reservationId: string;
    userId: string;
    quantity: number;
    reason: string;
    reservedAt: string | null;
    detectedAt: string;
  }[];
  /** Pass back as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
  /** Payment events for reservations no store knows, of this sale (it lost some it cannot name). */
  unmatchedPayments: { total: number; first: { eventId: string; reservationId: string; amountCents: number; receivedAt: string }[] };
}

/**
 * A sale's losses for the operator: the count MySQL keeps with the sale, the named ones a page at a
 * time (keyset on the reservation id), and the payments that matched nothing. MySQL only: the losses
 * are what neither store's live state holds any more.
 */
export async function readSaleLosses(mysql: OrderStore, saleId: number, page: { limit: number; cursor?: string }): Promise<SaleLossesPage> {
  const sale = await mysql.sale(saleId).find();
  if (!sale) throw new AppError('SALE_NOT_FOUND', { saleId });
  const [named, listed, unmatched] = await Promise.all([
    mysql.sale(saleId).countLostReservations(),
    mysql.sale(saleId).listLostReservations({ limit: page.limit, after: page.cursor }),
    mysql.sale(saleId).listUnmatchedPayments(UNMATCHED_SHOWN),
  ]);
  const lost = { reservations: sale.lostReservations, units: sale.lostUnits };
  return {
    saleId,
    lost,
    named,
    unnamed: { reservations: Math.max(0, lost.reservations - named.reservations), units: Math.max(0, lost.units - named.units) },
    reservations: listed.items.map((l) => ({
      reservationId: l.reservationId,
      userId: l.userId,
      quantity: l.quantity,
      reason: l.reason,
      reservedAt: l.reservedAt === null ? null : new Date(l.reservedAt).toISOString(),
      detectedAt: l.detectedAt.toISOString(),
    })),
    nextCursor: listed.next,
    unmatchedPayments: { total: unmatched.total, first: unmatched.items.map((p) => ({ ...p, receivedAt: p.receivedAt.toISOString() })) },
  };
}
