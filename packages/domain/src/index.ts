export { ERRORS, AppError, detailOf, serviceUnavailable, type AppErrorArgs, type DetailParams, type ErrorCode } from './error-catalogue.ts';
export {
  FAILURES,
  Failure,
  SaleLockBusy,
  DrainTimeout,
  SaleNotFound,
  DeadlineExceeded,
  withDeadline,
  type FailureCode,
} from './failures.ts';
export { saleStatus, type SaleStatus, type SaleClockView } from './sale-status.ts';
export { ledgerConsistent, type LedgerCounts } from './ledger-consistency.ts';
export { newReservationId, saleIdOfReservation } from './reservation-id.ts';
export type { Reservation } from './reservation.ts';
export type { RejectReason, DeadLetterReason } from './dead-letter-reason.ts';
export { DEAD_LETTER_REASONS } from './dead-letter-reason.ts';
export { ReserveCode } from './reserve-code.ts';
export { parseSaleId, MAX_SALE_ID, MAX_PER_USER_LIMIT, MAX_STOCK, SALE_TIME_RANGE, LAST_DATETIME_MS, type SaleDefinition } from './sale.ts';
export { signPaymentEvent, checkPaymentSignature, SIGNATURE_TOLERANCE_SECONDS, type SignatureProblem } from './payment-signature.ts';
export {
  planControl,
  type SaleControl,
  type SaleControlAction,
  type SaleControlState,
  type ControlledSale,
  type ControlPlan,
} from './sale-control.ts';
export { REBUY_RULE_DEFAULTS, REBUY_RULE_LIMITS, type RebuyRule } from './rebuy-rule.ts';
export {
  DOOR_TERMS_DEFAULTS,
  DOOR_TERMS_LIMITS,
  ARRIVAL_SCORE_BASE,
  CLAIM_NAME,
  DOOR_CHALLENGES,
  NO_SHOW_RATE_MAX,
  admissionRoom,
  REGISTERED_CLAIMS,
  doorGuardsOff,
  isDraw,
  type DoorChallenge,
  type DoorTerms,
} from './door-terms.ts';
export {
  queueTicketKey,
  signQueueTicket,
  readQueueTicket,
  createQueueTicketReader,
  type QueueTicket,
  type QueueTicketReader,
  type TicketProblem,
} from './queue-ticket.ts';
export {
  queueAnswer,
  isSoldOutForGood,
  turnNeedsLookup,
  MAX_RETRY_AFTER_SECONDS,
  DOOR_RESTORE_GRACE_MS,
  FINAL_RETRY_AFTER_SECONDS,
  type DoorView,
  type QueuePlace,
  type QueueAnswer,
  type QueueState,
} from './queue-status.ts';
