/** A sale's counts as the admin stats read them, each from its own store. */
export interface LedgerCounts {
  /** The sale's stock, from MySQL. */
  stock: number;
  /** Units Redis has left to sell; null when Redis holds no state for the sale. */
  remaining: number | null;
  /** Stream entries on their way to MySQL: not yet delivered to a worker, or delivered and not acknowledged. */
  inFlight: number;
  /** Units in the sale's live orders in MySQL (created or paid). */
  unitsInDb: number;
  /** Units of cancelled or expired orders MySQL owes back to Redis and has not given back yet. */
  unitsAwaitingReturn?: number;
}

/**
 * Whether a sale's counts agree (`stats.consistent`). With nothing in flight the ledger must balance
 * exactly: remaining + units in live orders + units on their way back = stock. While entries are in
 * flight their units are in neither count, so all that can be checked is that nothing is oversold. A sale Redis holds no state for
 * cannot be checked, and is not consistent.
 */
export function ledgerConsistent({ stock, remaining, inFlight, unitsInDb, unitsAwaitingReturn = 0 }: LedgerCounts): boolean {
  if (remaining === null || unitsInDb > stock) return false;
  const counted = remaining + unitsInDb + unitsAwaitingReturn;
  return inFlight === 0 ? counted === stock : counted <= stock;
}
