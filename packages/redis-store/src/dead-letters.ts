import type { DeadLetterReason } from '@flashsale/domain';
import type { SaleRef } from './store-ref.ts';
import { ORDER_WRITERS_GROUP } from './keys.ts';
import { decodeReservation, type StreamEntry } from './reservation-stream.ts';
import { parseBuyerRecord } from './buyer-record.ts';

/**
 * The entries the workers set aside, per sale: the dead-letter stream (`deadLetter` in keys.ts), each
 * entry `id` (the original entry id), `reason`, `deliveries`, then the original fields; and the rejected
 * hash (`rejected`), reservation id -> JSON `{"u": user id, "q": quantity, "reason": code}`, and
 * `units:<generation>` -> the units of that generation's reservations set aside, each reservation once.
 * Both are written by dead-letter-4.lua only, and read here only.
 */

/** A reservation the workers set aside instead of writing it as an order. */
export interface DeadLetteredReservation {
  reservationId: string;
  userId: string;
  quantity: number;
  reason: string;
}

/**
 * Moves the entry to the dead-letter stream, records its reservation as rejected (for status lookups) and
 * acknowledges it, atomically (dead-letter-4.lua).
 */
export async function deadLetter(
  { redis, keys, saleId }: SaleRef,
  entry: StreamEntry,
  reason: DeadLetterReason,
  deliveries: number,
): Promise<void> {
  // What a well-formed entry is, decodeReservation alone says: the script is told the units of one, and
  // '' for a malformed entry, which took none.
  const decoded = decodeReservation(saleId, entry.id, entry.fields);
  const units = decoded.ok ? String(decoded.reservation.quantity) : '';
  await redis.deadLetter(
    keys.stream,
    keys.deadLetter,
    keys.rejected,
    keys.buyers,
    ORDER_WRITERS_GROUP,
    entry.id,
    reason,
    deliveries,
    units,
    ...entry.fields,
  );
}

/**
 * The rejection of a reservation, if the workers set it aside: one HGET of the sale's rejected hash,
 * which dead-letter-4.lua writes together with the dead-letter entry. A status lookup costs the same
 * whether a sale has no dead letters or a million.
 */
export async function findDeadLetter({ redis, keys }: SaleRef, reservationId: string): Promise<DeadLetteredReservation | null> {
  const record = await redis.hget(keys.rejected, reservationId);
  if (record === null) return null;
  const { u, q, reason } = JSON.parse(record) as { u?: string; q?: string | number; reason?: string };
  return { reservationId, userId: u ?? '', quantity: Number(q), reason: reason ?? '' };
}

/** Which of these reservations the workers set aside (one HMGET of the rejected hash), in their order. */
export async function areSetAside({ redis, keys }: SaleRef, reservationIds: readonly string[]): Promise<boolean[]> {
  if (reservationIds.length === 0) return [];
  const records = await redis.hmget(keys.rejected, ...reservationIds);
  return records.map((record) => record !== null);
}

/** The rejected hash's field counting the units of a generation's reservations set aside (dead-letter-4.lua). */
export function deadLetteredUnitsField(generation: string): string {
  return `units:${generation}`;
}

/** Dead-letter entries per read of readDeadLettered. */
const PAGE = 1000;

/** Where a dead-letter entry's copy of the original fields starts: after id, reason and deliveries. */
const ORIGINAL_FIELDS_AT = 6;

/**
 * The units of each reservation of `generation` set aside, by reservation id (one set aside twice counts
 * once), from the dead-letter stream itself up to its entry `upTo` (the last one at the instant the caller
 * read the rest of its figures). Left out, as dead-letter-4.lua leaves them out of its count: entries that
 * were not reservations (malformed), and reservations the buyers hash does not record as its buyer's (the
 * reserve script never took their units: an entry written by hand). Reads the whole stream, in pages,
 * and the buyers of each page: the audit's way of counting exactly when the kept count does not balance.
 */
export async function readDeadLettered(
  { redis, keys, saleId }: SaleRef,
  { generation, upTo }: { generation: string; upTo: string | null },
): Promise<Map<string, number>> {
  const byReservation = new Map<string, number>();
  if (upTo === null) return byReservation;
  for (let from = '-'; ;) {
    const page = (await redis.xrange(keys.deadLetter, from, upTo, 'COUNT', PAGE)) as [id: string, fields: string[]][];
    const reservations = page.flatMap(([, fields]) => {
      const decoded = decodeReservation(saleId, fields[1] ?? '', fields.slice(ORIGINAL_FIELDS_AT));
      return decoded.ok && decoded.reservation.generation === generation ? [decoded.reservation] : [];
    });
    const records = reservations.length === 0 ? [] : await redis.hmget(keys.buyers, ...reservations.map((r) => r.userId));
    reservations.forEach((reservation, i) => {
      const held = records[i] ? parseBuyerRecord(records[i]) : null;
      if (held?.reservationId === reservation.reservationId && held.quantity === reservation.quantity)
        byReservation.set(reservation.reservationId, reservation.quantity);
    });
    if (page.length < PAGE) return byReservation;
    from = `(${page[page.length - 1]![0]}`;
  }
}

/**
 * How many of a sale's last `count` dead letters each reason holds (the dashboard's view): one
 * XREVRANGE, whatever the stream's length, so a view read every second costs a bounded read.
 */
export async function recentDeadLettersByReason(
  { redis, keys }: SaleRef,
  count = 1000,
): Promise<{ read: number; byReason: Record<string, number> }> {
  const entries = (await redis.xrevrange(keys.deadLetter, '+', '-', 'COUNT', count)) as [id: string, fields: string[]][];
  const byReason: Record<string, number> = {};
  // Fields: id <entry id> reason <reason> deliveries <n> ... (see dead-letter-4.lua).
  for (const [, fields] of entries) byReason[fields[3] ?? ''] = (byReason[fields[3] ?? ''] ?? 0) + 1;
  return { read: entries.length, byReason };
}
