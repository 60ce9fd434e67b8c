import { Prisma, type PrismaClient } from './generated/prisma/client.ts';
import { closeOrders, type ClosedReason, type ClosingOrder } from './order-lifecycle.ts';

/** An order closed again: MySQL had it live, Redis had given its units back. */
export interface ReclosedOrder {
  reservationId: string;
  userId: string;
  quantity: number;
  status: ClosedReason;
}

/**
 * Closes again the orders of `reservationIds` that MySQL holds live (`created`) although Redis gave their
 * units back in `generation`: MySQL went back in time to before their cancel or expiry (a replica promoted
 * behind, a restored dump). Redis gives units back only after MySQL committed the close (stock_returns),
 * and a closed order never reopens, so a live order among them is a close MySQL lost. Left live, the
 * rebuild would take its units off sale again and a buyer answered 202 since would have no room.
 *
 * Which close it was is not kept: an order whose payBy has passed is `expired` (the expiry closes only
 * those), one still within its window `cancelled` (only its buyer could have closed it). Under the sale
 * row lock, as every close; only while MySQL holds the same generation as Redis (another generation's
 * returns say nothing of this one). The stock_returns rows written are settled by the rebuild that follows.
 */
export async function recloseOrders(
  prisma: PrismaClient,
  saleId: number,
  generation: string,
  reservationIds: readonly string[],
): Promise<ReclosedOrder[]> {
  if (reservationIds.length === 0) return [];
  return prisma.$transaction(
    async (tx) => {
      const [sale] = await tx.$queryRaw<
        { redis_generation: string | null }[]
      >`SELECT redis_generation FROM sales WHERE id = ${saleId} FOR UPDATE`;
      if (sale?.redis_generation !== generation) return [];
      const live = await tx.$queryRaw<(ClosingOrder & { due: number | bigint })[]>`
        SELECT id, reservation_id, user_id, quantity, pay_by <= NOW(3) AS due FROM orders
        WHERE sale_id = ${saleId} AND status = 'created' AND reservation_id IN (${Prisma.join([...reservationIds])}) FOR UPDATE`;
      const expired = live.filter((order) => Number(order.due) === 1);
      const cancelled = live.filter((order) => Number(order.due) !== 1);
      await closeOrders(tx, saleId, generation, expired, 'expired');
      await closeOrders(tx, saleId, generation, cancelled, 'cancelled');
      const as = (status: ClosedReason) => (order: ClosingOrder) => ({
        reservationId: order.reservation_id,
        userId: order.user_id,
        quantity: Number(order.quantity),
        status,
      });
      return [...expired.map(as('expired')), ...cancelled.map(as('cancelled'))];
    },
    { maxWait: 5_000, timeout: 30_000 },
  );
}
