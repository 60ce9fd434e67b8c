export { ERRORS, AppError, type ErrorCode } from './error-catalogue.ts';
export { FAILURES, Failure, SaleLockBusy, DrainTimeout, SaleNotFound, DeadlineExceeded, type FailureCode } from './failures.ts';
export { saleStatus, type SaleStatus, type SaleClockView } from './sale-status.ts';
export { ledgerConsistent, type LedgerCounts } from './ledger-consistency.ts';
export { newReservationId, saleIdOfReservation } from './reservation-id.ts';
export type { Reservation } from './reservation.ts';
export type { RejectReason, DeadLetterReason } from './dead-letter-reason.ts';
export { ReserveCode } from './reserve-code.ts';
export { parseSaleId, MAX_SALE_ID, MAX_PER_USER_LIMIT, SALE_TIME_RANGE, type SaleDefinition } from './sale.ts';
