import type { OrderStore, ReclosedOrder } from '@flashsale/order-store';
import type { SaleRedis } from '@flashsale/redis-store';

/** Reservation ids per HSCAN page and per transaction. */
const PAGE = 1000;

/**
 * Closes again the orders MySQL reopened by going back in time: live in MySQL, yet given back in Redis's
 * state (the sale's returned hash holds every reservation whose units came back in this generation).
 * Called by a reconciliation with the sale paused and drained, before the orders MySQL lost are written
 * again from Redis (restoreOrdersFromRedis): the stock those closes freed is what the buyers who bought
 * since hold, and without them the restore would refuse those buyers as over stock.
 */
export async function recloseOrdersFromRedis(inRedis: SaleRedis, mysql: OrderStore): Promise<ReclosedOrder[]> {
  const generation = await inRedis.generation();
  if (generation === null) return [];
  const reclosed: ReclosedOrder[] = [];
  for await (const ids of inRedis.returnedReservationPages(PAGE))
    reclosed.push(...(await mysql.sale(inRedis.saleId).recloseOrders(generation, ids)));
  return reclosed;
}
