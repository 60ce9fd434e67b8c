import { saleStatus } from '@flashsale/domain';
import type { SaleRecord } from '@flashsale/order-store';
import type { SaleState } from '@flashsale/redis-store';

/**
 * A sale as operators see it (every 200 of the controls and each row of the list): the terms as MySQL
 * holds them, the live stock from Redis, and both pauses apart. `state` null: Redis does not hold the sale
 * (lost, and intake stopped until the reconciler rebuilds it), so remaining is MySQL's count and the sale
 * shows paused. `now` is Redis's clock, the one the reserve script judges the window by.
 */
export function adminSaleView(sale: SaleRecord, state: SaleState | null, now: number) {
  const remaining = state ? state.remaining : sale.stock - sale.soldUnits;
  const reconciling = state ? state.paused : true;
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    remaining,
    startsAt: new Date(sale.startsAt).toISOString(),
    endsAt: new Date(sale.endsAt).toISOString(),
    perUserLimit: sale.perUserLimit,
    /** The rebuy rule: the most orders one buyer may open, and the wait after their second closed order. */
    maxOrdersPerBuyer: sale.rebuyRule.maxOrdersPerBuyer,
    rebuyCooldownSeconds: sale.rebuyRule.rebuyCooldownSeconds,
    status: saleStatus({ startsAt: sale.startsAt, endsAt: sale.endsAt, remaining, paused: sale.operatorPaused || reconciling }, now),
    /** When an operator paused it (null: not paused by an operator). */
    pausedByOperatorAt: sale.operatorPausedAt === null ? null : new Date(sale.operatorPausedAt).toISOString(),
    /** The reconciler's own pause: a reconciliation is draining and rebuilding the sale. */
    reconciling,
    createdAt: new Date(sale.createdAt).toISOString(),
  };
}

export type AdminSaleView = ReturnType<typeof adminSaleView>;
