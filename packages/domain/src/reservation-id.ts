import { randomFillSync } from 'node:crypto';

/** Random bytes an id takes from the pool: 74 random bits, written from 10 bytes (a few bits left unused). */
const RANDOM_BYTES = 10;
/** Drawn from the system's generator 400 ids at a time. */
const pool = Buffer.alloc(RANDOM_BYTES * 400);
let poolAt = pool.length;
const DIGIT_HEX = Array.from({ length: 16 }, (_, digit) => digit.toString(16));
const BYTE_HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

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
 * The random bits are read from a pool of random bytes drawn in bulk (as Node's own `randomUUID` does)
 * and written as hex from a table. The ids of one sale and millisecond (a crowd makes dozens) share the
 * part before the random bits, built once.
 */
export function newReservationId(saleId: number): string {
  const now = Date.now();
  if (now !== stampedAt || saleId !== stampedSale) {
    stampedAt = now;
    stampedSale = saleId;
    const hex = now.toString(16).padStart(12, '0');
    prefix = `${saleId}-${hex.slice(0, 8)}-${hex.slice(8, 12)}-7`;
  }
  if (poolAt + RANDOM_BYTES > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const p = pool;
  const at = poolAt;
  poolAt += RANDOM_BYTES;
  // After the version digit: rand_a (12 bits), then the variant (binary 10) and 62 bits of rand_b.
  return (
    prefix +
    BYTE_HEX[p[at]!] +
    DIGIT_HEX[p[at + 1]! >> 4] +
    '-' +
    DIGIT_HEX[0x8 | (p[at + 1]! & 0x3)] +
    BYTE_HEX[p[at + 2]!] +
    DIGIT_HEX[p[at + 3]! >> 4] +
    '-' +
    BYTE_HEX[p[at + 4]!] +
    BYTE_HEX[p[at + 5]!] +
    BYTE_HEX[p[at + 6]!] +
    BYTE_HEX[p[at + 7]!] +
    BYTE_HEX[p[at + 8]!] +
    BYTE_HEX[p[at + 9]!]
  );
}

const RESERVATION_ID = /^([1-9][0-9]{0,9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The sale a reservation id belongs to, or null when the string is not a reservation id. */
export function saleIdOfReservation(reservationId: string): number | null {
  const match = RESERVATION_ID.exec(reservationId);
  return match ? Number(match[1]) : null;
}
