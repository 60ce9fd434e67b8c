import type { PrismaClient } from './generated/prisma/client.ts';

/** A buyer's closed (cancelled or expired) orders in one sale, as MySQL records them. */
export interface BuyerClosedRow {
  userId: string;
  closedOrders: number;
  /** Milliseconds since the last one closed, on MySQL's clock (its closed_at is MySQL's too). */
  msSinceLastClosed: number;
}

/**
 * One page of a sale's buyers with closed orders, in user id order after `afterUserId` ('' from the
 * start): what the sale's rebuy rule counts, derived again when its Redis state is rebuilt. user_id is
 * compared byte for byte (its collation), so the keyset `user_id > ?` pages exactly in ORDER BY's order;
 * the (sale_id, user_id) index serves both.
 */
export async function closedOrdersPage(
  prisma: PrismaClient,
  saleId: number,
  afterUserId: string,
  limit: number,
): Promise<BuyerClosedRow[]> {
  const rows = await prisma.$queryRaw<{ userId: string; closedOrders: bigint | number; msSince: bigint | number }[]>`
    SELECT user_id AS userId, COUNT(*) AS closedOrders,
      TIMESTAMPDIFF(MICROSECOND, MAX(COALESCE(closed_at, created_at)), NOW(3)) DIV 1000 AS msSince
    FROM orders
    WHERE sale_id = ${saleId} AND status IN ('cancelled', 'expired') AND user_id > ${afterUserId}
    GROUP BY user_id ORDER BY user_id LIMIT ${limit}`;
  return rows.map((row) => ({
    userId: row.userId,
    closedOrders: Number(row.closedOrders),
    msSinceLastClosed: Math.max(0, Number(row.msSince)),
  }));
}
