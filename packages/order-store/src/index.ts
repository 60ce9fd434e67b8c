// The store's one way in for the application layer: `createOrderStore(prisma)`, which binds the client
// once (order-store.ts). The table modules' own functions, which take the client first, are not exported:
// what only tests use is in './testing'.
export { createOrderStore, type OrderStore, type SaleOrders } from './order-store.ts';
export { createPrisma, PrismaClient } from './prisma-client.ts';
export { isMysqlUnavailable } from './mysql-unavailable.ts';
export { isConflict, retryOnConflict, mysqlConflictsSoFar, CONFLICT_ATTEMPTS, type ConflictOperation } from './mysql-conflicts.ts';
export { judgeMysqlServer } from './mysql-identity.ts';
export { dropDatabase, migrate } from './migrator.ts';
export { poolConfigFromUrl } from './database-url.ts';
export { LIVE_ORDER_STATUSES, type NewSale, type SaleRecord } from './sale-repository.ts';
export { isPermanentWriteError, type BatchOutcome } from './order-writer.ts';
export { LIVE_BUYERS_PER_PAGE, type Checkpoint, type WatchedSale, type LossJudgement, type RecordedState } from './sale-ledger.ts';
export { withSaleLock } from './sale-lock.ts';
export { checkConnectionBudget, type ProcessRole } from './connection-budget.ts';
export { type OwedReturn, type PaymentOutcome, type PaymentRecord, type PaymentEventInput } from './order-lifecycle.ts';
export { controlStateOf } from './sale-controls.ts';
export { isLostRefusal, type LostRefusal } from './lost-reservations.ts';
export { type ReclosedOrder } from './order-reclosing.ts';
export { type CreationKey } from './sale-publication.ts';
