import { randomUUID } from 'node:crypto';

/**
 * A reservation id names its sale (`<saleId>-<uuid>`), so a status lookup finds the sale's keys without
 * an index, and is random rather than a Redis counter or stream id, so it stays unique even after Redis
 * loses its data and counters start again (a repeated id would be taken for a replay and dropped).
 */
export function newReservationId(saleId: number): string {
  return `${saleId}-${randomUUID()}`;
}

const RESERVATION_ID = /^([1-9][0-9]{0,9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The sale a reservation id belongs to, or null when the string is not a reservation id. */
export function saleIdOfReservation(reservationId: string): number | null {
  const match = RESERVATION_ID.exec(reservationId);
  return match ? Number(match[1]) : null;
}
