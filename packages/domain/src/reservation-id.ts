import { randomUUID } from 'node:crypto';

/** The millisecond and sale of the last id made, and the part of its id they give: `<saleId>-<time>-7`. */
let stampedAt = -1;
let stampedSale = -1;
let prefix = '';

/**
 * A reservation id names its sale (`<saleId>-<uuid>`), so a status lookup finds the sale's keys without
 * an index, and is random rather than a Redis counter or stream id, so it stays unique even after Redis
 * loses its data and counters start again (a repeated id would be taken for a replay and dropped).
 *
 * The uuid is a version 7 (RFC 9562): 48 bits of the Unix time in milliseconds, then 74 random bits. The
 * ids of a sale then sort by when they were made, so the orders table's unique key on them takes each new
 * order at the right edge of the sale's range, where a random id lands anywhere in the index: once the
 * index outgrows MySQL's buffer pool, nearly every insert is a page read and a page split somewhere else
 * (measured: docs/performance.md, "Where an order's CPU goes", MariaDB). The 74 bits keep two ids of one millisecond
 * apart; the clock only orders them, so a clock set back costs locality, never uniqueness.
 *
 * Made from `randomUUID` (whose random bytes Node draws ahead, in bulk): its first 48 bits and its
 * version digit are replaced; the variant and the 74 random bits after them are kept. The ids of one
 * sale and millisecond (a crowd makes dozens) share the part before the random bits, built once.
 */
export function newReservationId(saleId: number): string {
  const now = Date.now();
  if (now !== stampedAt || saleId !== stampedSale) {
    stampedAt = now;
    stampedSale = saleId;
    const hex = now.toString(16).padStart(12, '0');
    prefix = `${saleId}-${hex.slice(0, 8)}-${hex.slice(8, 12)}-7`;
  }
  // randomUUID(): xxxxxxxx-xxxx-4xxx-…; from index 15 on, the 3 hex digits after the version and the rest.
  return prefix + randomUUID().slice(15);
}

const RESERVATION_ID = /^([1-9][0-9]{0,9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The sale a reservation id belongs to, or null when the string is not a reservation id. */
export function saleIdOfReservation(reservationId: string): number | null {
  const match = RESERVATION_ID.exec(reservationId);
  return match ? Number(match[1]) : null;
}
