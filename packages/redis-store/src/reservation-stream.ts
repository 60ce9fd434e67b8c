/**
 * The format of a reservation on a sale's stream. The reserve script writes it (reserve-3.lua), the
 * workers read it: fields `r` reservation id, `u` user id, `q` quantity, `t` time accepted (epoch ms,
 * Redis clock), `g` the generation of the sale's Redis state that accepted it. Short names because every
 * accepted purchase writes them.
 */
export interface Reservation {
  /** The stream entry id, needed to acknowledge it. */
  entryId: string;
  reservationId: string;
  saleId: number;
  userId: string;
  quantity: number;
  reservedAt: number;
  generation: string;
}

export type DecodedEntry = { ok: true; reservation: Reservation } | { ok: false; entryId: string; fields: string[]; reason: 'MALFORMED_ENTRY' };

/** Decodes one stream entry; a malformed one is reported, never thrown, so it can be dead-lettered. */
export function decodeReservation(saleId: number, entryId: string, fields: string[]): DecodedEntry {
  const field = (name: string, at: number): string | undefined => (fields[at] === name ? fields[at + 1] : fieldNamed(fields, name));
  // The reserve script writes the fields in this order; looked up by name should an entry differ.
  const reservationId = field('r', 0);
  const userId = field('u', 2);
  const quantity = digitsValue(field('q', 4));
  const reservedAt = digitsValue(field('t', 6));
  const generation = field('g', 8);
  if (!reservationId || !userId || !generation || !Number.isInteger(quantity) || quantity < 1 || !isStorableTime(reservedAt)) {
    return { ok: false, entryId, fields, reason: 'MALFORMED_ENTRY' };
  }
  return { ok: true, reservation: { entryId, reservationId, saleId, userId, quantity, reservedAt, generation } };
}

/** Latest instant a MySQL DATETIME holds (9999-12-31 23:59:59.999 UTC), in epoch ms. */
const LAST_DATETIME_MS = 253_402_300_799_999;

/** Epoch ms that MySQL can store as a DATETIME: anything else would fail the write on every retry. */
function isStorableTime(epochMs: number): boolean {
  return Number.isSafeInteger(epochMs) && epochMs >= 0 && epochMs <= LAST_DATETIME_MS;
}

/** A number written in digits, as the reserve script writes them; NaN else (Number() reads '' as 0, ' 2' or '0x2' as 2). */
function digitsValue(value: string | undefined): number {
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : NaN;
}

function fieldNamed(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
