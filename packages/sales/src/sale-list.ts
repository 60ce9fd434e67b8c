import type { SaleRecord } from '@flashsale/order-store';
import type { SaleState } from '@flashsale/redis-store';
import { adminSaleView, type AdminSaleView } from './admin-sale-view.ts';
import type { SalesDeps } from './sales-deps.ts';
import { findSaleUnlessMissing, type SaleMisses } from './sale-misses.ts';

/** One page of the operator's sales list, newest first; `nextCursor` names the next page (null: last). */
export interface AdminSalePage {
  sales: AdminSaleView[];
  nextCursor: string | null;
}

/**
 * The sales list of GET /api/admin/sales, the dashboard and `npm run admin -- list`: MySQL's page, each
 * sale's live state read from Redis (one HGETALL each, sent together), judged on Redis's clock.
 */
export async function listAdminSales(
  deps: Pick<SalesDeps, 'redis' | 'mysql'>,
  { limit, cursor }: { limit: number; cursor?: number },
): Promise<AdminSalePage> {
  const redis = deps.redis;
  const [page, now] = await Promise.all([deps.mysql.listSalesPage({ limit, before: cursor }), redis.now()]);
  const states = await Promise.all(page.sales.map((sale) => redis.sale(sale.id).state()));
  return {
    sales: page.sales.map((sale, i) => adminSaleView(sale, states[i]!, now)),
    nextCursor: page.next === null ? null : String(page.next),
  };
}

/** One sale as operators see it, with its admission terms (the dashboard's sale view); null when MySQL has no such sale. */
export async function readAdminSale(
  deps: Pick<SalesDeps, 'redis' | 'mysql'>,
  saleId: number,
): Promise<{ sale: AdminSaleView; admission: SaleRecord['admission'] } | null> {
  const inRedis = deps.redis.sale(saleId);
  const [record, state, now] = await Promise.all([deps.mysql.sale(saleId).find(), inRedis.state(), inRedis.now()]);
  return record && { sale: adminSaleView(record, state, now), admission: record.admission };
}

/** Whether MySQL holds the sale. */
export async function saleExists(mysql: SalesDeps['mysql'], saleId: number): Promise<boolean> {
  return (await mysql.sale(saleId).find()) !== null;
}

/**
 * A sale as buyers see it (GET /api/sales/:id): Redis's live state while Redis holds it; else MySQL's
 * record (no such sale, or Redis lost it and intake is stopped until it is rebuilt); null when MySQL has
 * none either. `now` is Redis's clock, the one the reserve script judges the window by, so the page and
 * the purchase endpoint never disagree about whether the sale has started. `writesRefused`: the sale's
 * Redis server is over its memory limit, so every purchase is refused however the sale stands.
 */
export async function readBuyerSale(
  deps: Pick<SalesDeps, 'redis' | 'mysql'> & { misses?: SaleMisses },
  saleId: number,
): Promise<(({ state: SaleState } | { record: SaleRecord }) & { now: number; writesRefused: boolean }) | null> {
  // An id this process found missing a moment ago costs neither store again (a creation is announced).
  if (deps.misses?.has(saleId)) return null;
  const inRedis = deps.redis.sale(saleId);
  const [state, now, memory] = await Promise.all([inRedis.state(), inRedis.now(), inRedis.memoryLimit()]);
  if (state) return { state, now, writesRefused: memory.refusesWrites };
  const record = await findSaleUnlessMissing(deps.mysql, deps.misses, saleId);
  return record && { record, now, writesRefused: memory.refusesWrites };
}
