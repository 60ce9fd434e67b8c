/**
 * Why the order writer refuses a reservation. Each is kept in the dead-letter stream, never dropped.
 */
export type RejectReason =
  /** The sale is not in MySQL. */
  | 'SALE_NOT_FOUND'
  /** The buyer already has an order for this sale under another reservation (Redis lost its buyers). */
  | 'DUPLICATE_BUYER'
  /**
   * The order would put more units in orders than the sale has (Redis held more stock than MySQL): named
   * and counted as a reservation lost (recordRefusalsLost).
   */
  | 'OVER_STOCK'
  /**
   * More units than the sale's per-user limit (sales.per_user_limit). The reserve script never accepts
   * that, so the entry came from somewhere else (a bug, or written into the stream by hand): refused
   * by the writer too, as over stock is, rather than trusted because it is on the stream.
   */
  | 'OVER_USER_LIMIT'
  /** A quantity that is not a whole number of at least 1, which no purchase can have made. */
  | 'INVALID_QUANTITY'
  /**
   * The entry belongs to a Redis state of the sale that has since been rebuilt. The rebuild counted
   * only what MySQL held, so writing it now would sell its units twice: it is refused, and named and
   * counted as a reservation lost (recordRefusalsLost). Only a Redis data loss or failover can
   * cause it: after a planned reconciliation the stream has drained before the rebuild.
   */
  | 'STALE_GENERATION';

/**
 * Why a stream entry was set aside in the sale's dead-letter stream instead of becoming an order: the
 * writer's reasons and the worker's own. Operators find each there with its original fields; the admin
 * stats count them, the worker's metrics label them, and a buyer's status lookup shows the reason.
 * Stable codes: add new ones, never rename.
 */
export type DeadLetterReason =
  | RejectReason
  /** The entry is not a reservation: a field missing, or a value no purchase can have. */
  | 'MALFORMED_ENTRY'
  /** Delivered more than WORKER_MAX_DELIVERIES times: the workers holding it kept dying. */
  | 'MAX_DELIVERIES'
  /** MySQL refuses the entry for its data, written alone (a value too long, say). */
  | 'WRITE_FAILED';

// A record, not an array: the compiler fails here when a reason is added to the type and not listed.
const EVERY_DEAD_LETTER_REASON: Record<DeadLetterReason, true> = {
  SALE_NOT_FOUND: true,
  DUPLICATE_BUYER: true,
  OVER_STOCK: true,
  OVER_USER_LIMIT: true,
  INVALID_QUANTITY: true,
  STALE_GENERATION: true,
  MALFORMED_ENTRY: true,
  MAX_DELIVERIES: true,
  WRITE_FAILED: true,
};

/**
 * Every dead-letter reason, for the worker's metrics to export each at 0 from the start: Prometheus's
 * `increase()` sees no increase in a series whose first sample is already 1.
 */
export const DEAD_LETTER_REASONS = Object.keys(EVERY_DEAD_LETTER_REASON) as DeadLetterReason[];
