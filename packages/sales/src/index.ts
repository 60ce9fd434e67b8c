// The application layer: every use case that spans MySQL and Redis. Routes, commands and the apps' loops
// parse, call one of these, and render; the crash-point argument of each sits beside its code.
export type { SalesDeps } from './sales-deps.ts';
export { createDoor, type Door, type DoorDeps, type QueueReply } from './admission.ts';
export { DoorFrontiers } from './door-frontier.ts';
export { createSale } from './sale-creation.ts';
export { runSaleControl, type ControlActor } from './sale-controls.ts';
export { SaleMisses } from './sale-misses.ts';
export { listAdminSales, readAdminSale, readBuyerSale, saleExists, type AdminSalePage } from './sale-list.ts';
export type { AdminSaleView } from './admin-sale-view.ts';
export { readSaleStats } from './sale-stats.ts';
export { LOSSES_PAGE, readSaleLosses, type SaleLossesPage } from './sale-losses.ts';
export { payReservation, receivePayment } from './payment-intake.ts';
export { cancelReservation } from './order-cancel.ts';
export { findReservationStatus, type ReservationStatus, type ReservationBeforeOrder } from './reservation-status.ts';
export { runExpiryPass, type ExpiryPassResult } from './order-expiry.ts';
export { settleReturns, type ReturnTally } from './order-returns.ts';
export { reconcileSale, type ReconcileDeps } from './sale-reconciliation.ts';
export { judgeLoss, holdsCheckpointEntry, type Loss } from './loss-judgement.ts';
export { restoreBuyerHistory, type BuyerHistoryDeps } from './buyer-history.ts';
export { storeFailures, isStoreUnavailable } from './store-failures.ts';
export { auditAndReport, auditSale, type AuditDeps, type AuditReport } from './ledger-audit.ts';
export { judge, listSalesToWatch, watchedSaleIds, watchOneSale, retireFinishedSales, type StateWatcherDeps, type SaleVisit, type Verdict } from './sale-watch.ts';
export { withinDeadline, WatchStepOverdueError } from './watch-deadline.ts';
export type { WatchedSale } from '@flashsale/order-store';
export { watchMysqlServer, type MysqlServerWatchDeps } from './mysql-server-watch.ts';
export { OrderIntake, Abandoned, backoffMs, type OrderIntakeObserver, type OrderIntakeStats, type StreamDelivery } from './order-intake.ts';
