import { recloseOrders, type PrismaClient, type ReclosedOrder } from '@flashsale/order-store';
import { saleKeys, type ScriptedRedis } from '@flashsale/redis-store';

/** Reservation ids per HSCAN page and per transaction. */
const PAGE = 1000;

/**
 * Closes again the orders MySQL reopened by going back in time: live in MySQL, yet given back in Redis's
 * state (the sale's returned hash holds every reservation whose units came back in this generation).
 * Called by a reconciliation with the sale paused and drained, before the orders MySQL lost are written
 * again from Redis (restoreOrdersFromRedis): the stock those closes freed is what the buyers who bought
 * since hold, and without them the restore would refuse those buyers as over stock.
 */
export async function recloseOrdersFromRedis(redis: ScriptedRedis, prisma: PrismaClient, prefix: string, saleId: number): Promise<ReclosedOrder[]> {
  const keys = saleKeys(prefix, saleId);
  const generation = await redis.hget(keys.meta, 'gen');
  if (generation === null) return [];
  const reclosed: ReclosedOrder[] = [];
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(keys.returned, cursor, 'COUNT', PAGE);
    cursor = next;
    const ids = flat.filter((_, i) => i % 2 === 0);
    reclosed.push(...(await recloseOrders(prisma, saleId, generation, ids)));
  } while (cursor !== '0');
  return reclosed;
}
