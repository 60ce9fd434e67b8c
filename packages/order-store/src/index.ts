export { createPrisma, PrismaClient, type PrismaOptions } from './prisma-client.ts';
export { isMysqlUnavailable } from './mysql-unavailable.ts';
export { mysqlServerIdentity } from './mysql-identity.ts';
export { dropDatabase, migrate, migrationNames, MIGRATIONS_DIR, type MigrationResult } from './migrator.ts';
export { poolConfigFromUrl } from './database-url.ts';
export { insertSale, findSale, listLiveSales, LIVE_ORDER_STATUSES, type NewSale, type SaleRecord } from './sale-repository.ts';
export { saleOrderLedger, ORDER_STATUSES, PAID_COUNT_SLOTS, type SaleOrderLedger } from './sale-counters.ts';
export { beginSaleCreation, markPublished, adoptSale, abandonSale, listStalledCreations, type CreationKey, type CreationStart, type PublishState } from './sale-publication.ts';
export { findOrderByReservation, type OrderView } from './order-repository.ts';
export { writeOrderBatch, isPermanentWriteError, type BatchOutcome } from './order-writer.ts';
export {
  listWatchedSales,
  findCheckpoint,
  recordCheckpoint,
  beginRebuild,
  liveBuyerPages,
  unitsAcceptedBy,
  type Checkpoint,
  type WatchedSale,
  type RebuildPlan,
  type LiveBuyer,
  type LossJudgement,
  type JudgeLoss,
} from './sale-ledger.ts';
export { withSaleLock } from './sale-lock.ts';
export { checkConnectionBudget, connectionBudgetOf, judgeConnectionBudget, readServerConnections, type BudgetVerdict, type ConnectionBudget, type ProcessRole, type ServerConnections } from './connection-budget.ts';
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
  type ArrivedPayment,
  type ArrivedPaymentsOf,
  type ExpiryOutcome,
  type CancelOutcome,
  type ClosedReason,
} from './order-lifecycle.ts';
export { controlSaleInMysql, controlStateOf, type MysqlControlOutcome } from './sale-controls.ts';
export { listSalesPage, type SalePage } from './sale-listing.ts';
export {
  countLostReservations,
  findLostReservation,
  listLostReservations,
  listUnmatchedPayments,
  recordLostReservations,
  type LostReservation,
  type LostReservationEntry,
  type UnmatchedPayment,
} from './lost-reservations.ts';
export { recloseOrders, type ReclosedOrder } from './order-reclosing.ts';
export { closedOrdersPage, type BuyerClosedRow } from './closed-orders.ts';
