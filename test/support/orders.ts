import { randomUUID } from 'node:crypto';
import { createOrderStore } from '@flashsale/order-store';
import { decodeReservation } from '@flashsale/redis-store';
import type { TestContext } from './context.ts';

/**
 * Writes the sale's new reservations as orders, the way a worker does (read from the group, write the
 * batch, acknowledge), for in-process tests that run a gateway without workers. Returns the orders written.
 */
export async function writeOrdersOf(ctx: TestContext, saleId: number): Promise<number> {
  const round = await ctx.store.readNewEntries('test-writer', [saleId], 1000);
  const entries = round.entries.get(saleId) ?? [];
  const reservations = entries.flatMap(({ id, fields }) => {
    const decoded = decodeReservation(saleId, id, fields);
    return decoded.ok ? [decoded.reservation] : [];
  });
  const outcome = await createOrderStore(ctx.prisma).sale(saleId).writeOrderBatch(reservations);
  await ctx.store.sale(saleId).acknowledge(entries.map((e) => e.id));
  return outcome.written.length;
}

/**
 * An order row as MySQL would hold it, for tests that set up a sale's history directly: live (`created`,
 * `paid`) or closed `closedAgoMs` before now (`cancelled`, `expired`).
 */
export function orderRow(saleId: number, userId: string, status: 'created' | 'paid' | 'cancelled' | 'expired', closedAgoMs = 0) {
  return {
    reservationId: `${saleId}-${randomUUID()}`,
    saleId,
    userId,
    quantity: 1,
    status,
    reservedAt: new Date(Date.now() - closedAgoMs - 1000),
    payBy: new Date(Date.now() + 900_000),
    closedAt: status === 'cancelled' || status === 'expired' ? new Date(Date.now() - closedAgoMs) : null,
  };
}
