export { createPrisma, PrismaClient } from './prisma-client.ts';
export { isMysqlUnavailable, mysqlAnswers } from './mysql-unavailable.ts';
export { isConflict, retryOnConflict, mysqlConflictsSoFar, CONFLICT_ATTEMPTS, type ConflictOperation } from './mysql-conflicts.ts';
export { mysqlServerIdentity, judgeMysqlServer } from './mysql-identity.ts';
export { dropDatabase, migrate } from './migrator.ts';
export { poolConfigFromUrl } from './database-url.ts';
export { insertSale, findSale, listLiveSales, LIVE_ORDER_STATUSES, type NewSale, type SaleRecord } from './sale-repository.ts';
export { saleOrderLedger } from './sale-counters.ts';
export { beginSaleCreation, markPublished, adoptSale, abandonSale, listStalledCreations, type CreationKey } from './sale-publication.ts';
export { findOrderByReservation, paidOrderPages, reservationsWithOrders } from './order-repository.ts';
export { writeOrderBatch, isPermanentWriteError, type BatchOutcome } from './order-writer.ts';
export {
  listWatchedSales,
  findCheckpoint,
  recordCheckpoint,
  lockSaleForRebuild,
  liveBuyerPages,
  LIVE_BUYERS_PER_PAGE,
  unitsAcceptedBy,
  type Checkpoint,
  type WatchedSale,
  type LossJudgement,
  type RecordedState,
} from './sale-ledger.ts';
export { withSaleLock } from './sale-lock.ts';
export { checkConnectionBudget, type ProcessRole } from './connection-budget.ts';
export { checkServerSettings } from './server-settings.ts';
export {
  recordPayment,
  recordOrderlessPayment,
  cancelOrder,
  expireDueOrders,
  pendingReturns,
  markReturned,
  type OwedReturn,
  type PaymentOutcome,
  type PaymentRecord,
  type PaymentEventInput,
} from './order-lifecycle.ts';
export { controlSaleInMysql, controlStateOf } from './sale-controls.ts';
export { listSalesPage } from './sale-listing.ts';
export { countLostReservations, findLostReservation, listLostReservations, listUnmatchedPayments, isLostRefusal, recordRefusalsLost, type LostRefusal } from './lost-reservations.ts';
export { recloseOrders, type ReclosedOrder } from './order-reclosing.ts';
export { closedOrdersPage } from './closed-orders.ts';
