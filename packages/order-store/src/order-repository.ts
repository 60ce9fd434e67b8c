import type { PrismaClient } from './generated/prisma/client.ts';

export interface OrderView {
  orderId: string;
  saleId: number;
  userId: string;
  quantity: number;
  status: string;
  /** When an unpaid order expires (reservedAt + the sale's payment window). */
  payBy: Date;
}

/** The order made from a reservation, if it is in MySQL yet. */
export async function findOrderByReservation(prisma: PrismaClient, reservationId: string): Promise<OrderView | null> {
  const order = await prisma.order.findUnique({ where: { reservationId } });
  if (!order) return null;
  return {
    orderId: order.id.toString(),
    saleId: order.saleId,
    userId: order.userId,
    quantity: order.quantity,
    status: order.status,
    payBy: order.payBy,
  };
}

/** A paid order, as a sale's door records it (its units can never come back). */
export interface PaidOrder {
  reservationId: string;
  quantity: number;
}

/** Paid orders per page of paidOrderPages. */
export const PAID_ORDERS_PER_PAGE = 1_000;

/**
 * The sale's paid orders, page after page, each page one statement on the (sale_id, user_id) index from
 * where the last one stopped (keyset on the buyer and the row id, never OFFSET): only one page is held
 * at a time, whatever the number of orders.
 */
export async function* paidOrderPages(prisma: PrismaClient, saleId: number, pageSize = PAID_ORDERS_PER_PAGE): AsyncGenerator<PaidOrder[]> {
  let after: { userId: string; id: bigint } | null = null;
  for (;;) {
    const where = { saleId, status: 'paid' as const };
    const rows: { id: bigint; userId: string; reservationId: string; quantity: number }[] = await prisma.order.findMany({
      where: after === null ? where : { ...where, OR: [{ userId: { gt: after.userId } }, { userId: after.userId, id: { gt: after.id } }] },
      select: { id: true, userId: true, reservationId: true, quantity: true },
      orderBy: [{ userId: 'asc' }, { id: 'asc' }],
      take: pageSize,
    });
    if (rows.length === 0) return;
    yield rows.map((row) => ({ reservationId: row.reservationId, quantity: row.quantity }));
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1]!;
    after = { userId: last.userId, id: last.id };
  }
}

/** Which of these reservations are orders in MySQL (one statement on the unique reservation_id index). */
export async function reservationsWithOrders(prisma: PrismaClient, reservationIds: readonly string[]): Promise<Set<string>> {
  if (reservationIds.length === 0) return new Set();
  const rows = await prisma.order.findMany({ where: { reservationId: { in: [...reservationIds] } }, select: { reservationId: true } });
  return new Set(rows.map((order) => order.reservationId));
}
