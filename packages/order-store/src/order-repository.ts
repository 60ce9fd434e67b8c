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
  return { orderId: order.id.toString(), saleId: order.saleId, userId: order.userId, quantity: order.quantity, status: order.status, payBy: order.payBy };
}
