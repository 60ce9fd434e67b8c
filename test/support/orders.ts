import { writeOrderBatch } from '@flashsale/order-store';
import { acknowledge, decodeReservation, readNewEntries } from '@flashsale/redis-store';
import type { TestContext } from './context.ts';

/**
 * Writes the sale's new reservations as orders, the way a worker does (read from the group, write the
 * batch, acknowledge), for in-process tests that run a gateway without workers. Returns the orders written.
 */
export async function writeOrdersOf(ctx: TestContext, saleId: number): Promise<number> {
  const round = await readNewEntries(ctx.redis, ctx.config.REDIS_PREFIX, 'test-writer', [saleId], 1000);
  const entries = round.entries.get(saleId) ?? [];
  const reservations = entries.flatMap(({ id, fields }) => {
    const decoded = decodeReservation(saleId, id, fields);
    return decoded.ok ? [decoded.reservation] : [];
  });
  const outcome = await writeOrderBatch(ctx.prisma, saleId, reservations);
  await acknowledge(ctx.redis, ctx.config.REDIS_PREFIX, saleId, entries.map((e) => e.id));
  return outcome.written.length;
}
