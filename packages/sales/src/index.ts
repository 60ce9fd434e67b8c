// The application layer: every use case that spans MySQL and Redis, reached through one facade built once
// per process (createSales, made by packages/bootstrap). Routes, commands and the apps' loops parse, call
// one of its methods, and render; the crash-point argument of each use case sits beside its code. Besides
// the facade: the vocabulary its methods speak (types, the stores' failures, pure rules of the watch).
export { createSales, type Sales, type SalesSetup, type SalesOptions, type DoorParts, type WatchSettings } from './sales.ts';
export type { Door, QueueReply } from './door.ts';
export { SaleMisses } from './sale-misses.ts';
export type { ControlActor } from './sale-controls.ts';
export type { AdminSalePage } from './sale-list.ts';
export type { AdminSaleView } from './admin-sale-view.ts';
export { LOSSES_PAGE, type SaleLossesPage } from './sale-losses.ts';
export type { ReservationStatus, ReservationBeforeOrder } from './reservation-status.ts';
export type { ExpiryPassResult } from './order-expiry.ts';
export type { ReturnTally } from './order-returns.ts';
export { ReconcileUnfinished, type ReconcileRequest } from './reconcile-request.ts';
export { storeFailures, isStoreUnavailable } from './store-failures.ts';
export type { AuditReport } from './ledger-audit.ts';
export { judge, type LookTerms, type SaleVisit, type Verdict } from './sale-watch.ts';
export { withinDeadline, WatchStepOverdueError } from './watch-deadline.ts';
export {
  Abandoned,
  backoffMs,
  type OrderIntake,
  type OrderIntakeObserver,
  type OrderIntakeStats,
  type StreamDelivery,
} from './order-intake.ts';
// The stores' and the reconcile queue's vocabulary, as the facade's methods take and return it.
export type { WatchedSale, NewSale, CreationKey, PaymentEventInput } from '@flashsale/order-store';
export type {
  ReserveOutcome,
  UnreplicatedOutcome,
  AdminSession,
  DoorGauges,
  RedisMemory,
  SaleSnapshot,
  StreamEntry,
} from '@flashsale/redis-store';
export {
  RECONCILE_QUEUE,
  AUDIT_QUEUE,
  bullPrefix,
  reconcileJobId,
  type ReconcileJobData,
  type ReconcileReason,
  type ReconcileResult,
} from '@flashsale/jobs';
