// What tests need of the application layer beside the facade: its use cases as functions, over deps a
// test builds itself (a hook of its own: a watch's reconcile requests collected, a reconciliation's
// announcement that starts a worker). Test code imports it from '@flashsale/sales/testing'.
import { createOrderStore, type PrismaClient } from '@flashsale/order-store';
import type { SaleStore } from '@flashsale/redis-store';
import type { Logger } from '@flashsale/runtime';
import type { SalesDeps } from './sales-deps.ts';

/** The stores bound once, as createSales binds them. */
export function salesDeps({ saleStore, prisma, logger }: { saleStore: SaleStore; prisma: PrismaClient; logger: Logger }): SalesDeps {
  return { redis: saleStore, mysql: createOrderStore(prisma), logger };
}

export type { SalesDeps } from './sales-deps.ts';
export { createSale } from './sale-creation.ts';
export { runSaleControl } from './sale-controls.ts';
export { reconcileSale, type ReconcileDeps } from './sale-reconciliation.ts';
export { auditSale, auditAndReport, type AuditDeps } from './ledger-audit.ts';
export { listSalesToWatch, retireFinishedSales, watchOneSale, type SaleWatch } from './sale-watch.ts';
export { watchMysqlServer } from './mysql-server-watch.ts';
