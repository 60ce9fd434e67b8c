import { describe, expect, it } from 'vitest';
import { decodeReservation } from './reservation-stream.ts';

// decodeReservation on its own: what the reserve script writes, and every shape of entry it must set
// aside as malformed (dead-lettered, never written, never retried).

const SALE = 12;
const ENTRY_ID = '1800000000123-0';
const RESERVATION_ID = '12-0b8c9f5e-7f7c-4a53-9d3e-1f1f2d0a6b11';
const GENERATION = '5d9b8a90-2f1e-4a53-9d3e-000000000001';

/** An entry as reserve.lua writes it, with some fields changed (null: left out). */
function entry(changes: Partial<Record<'r' | 'u' | 'q' | 't' | 'g', string | null>> = {}): string[] {
  const fields = { r: RESERVATION_ID, u: 'ann', q: '2', t: '1800000000123', g: GENERATION, ...changes };
  return Object.entries(fields).flatMap(([name, value]) => (value === null ? [] : [name, value]));
}

const reservation = {
  entryId: ENTRY_ID,
  reservationId: RESERVATION_ID,
  saleId: SALE,
  userId: 'ann',
  quantity: 2,
  reservedAt: 1_800_000_000_123,
  generation: GENERATION,
};

describe('decodeReservation', () => {
  it.each<[string, string[], Partial<typeof reservation>]>([
    ['an entry as the reserve script writes it', entry(), {}],
    ['its fields in another order', ['g', GENERATION, 't', '1800000000123', 'q', '2', 'u', 'ann', 'r', RESERVATION_ID], {}],
    ['a field more than it knows', [...entry(), 'x', 'anything'], {}],
    ['a buyer id with spaces, quotes and an emoji, kept as given', entry({ u: ' "ann" \u{1F600} ' }), { userId: ' "ann" \u{1F600} ' }],
    ['a quantity of 1', entry({ q: '1' }), { quantity: 1 }],
    ['the first instant a DATETIME holds', entry({ t: '0' }), { reservedAt: 0 }],
    ['the last instant a DATETIME holds (9999-12-31 23:59:59.999)', entry({ t: '253402300799999' }), { reservedAt: 253_402_300_799_999 }],
  ])('reads %s', (_, fields, changes) => {
    expect(decodeReservation(SALE, ENTRY_ID, fields)).toEqual({ ok: true, reservation: { ...reservation, ...changes } });
  });

  it.each<[string, string[]]>([
    ['no fields at all', []],
    ['no reservation id', entry({ r: null })],
    ['an empty reservation id', entry({ r: '' })],
    ['no buyer', entry({ u: null })],
    ['an empty buyer id', entry({ u: '' })],
    ['no quantity', entry({ q: null })],
    ['an empty quantity', entry({ q: '' })],
    ['a quantity of 0', entry({ q: '0' })],
    ['a negative quantity', entry({ q: '-1' })],
    ['a fractional quantity', entry({ q: '1.5' })],
    ['a quantity in words', entry({ q: 'two' })],
    ['a quantity with a space before it', entry({ q: ' 2' })],
    ['a quantity in hexadecimal', entry({ q: '0x2' })],
    ['a quantity in exponent notation', entry({ q: '2e0' })],
    ['a quantity of Infinity', entry({ q: 'Infinity' })],
    ['a quantity beyond the integers a double holds exactly', entry({ q: '9007199254740993' })],
    ['no time', entry({ t: null })],
    ['an empty time (not the epoch)', entry({ t: '' })],
    ['a negative time', entry({ t: '-1' })],
    ['a fractional time', entry({ t: '1800000000123.5' })],
    ['a time in words', entry({ t: 'yesterday' })],
    ['a time after the last instant a DATETIME holds', entry({ t: '253402300800000' })],
    ['a time beyond the integers a double holds exactly', entry({ t: '9007199254740993' })],
    ['no generation', entry({ g: null })],
    ['an empty generation', entry({ g: '' })],
    ['a field name without its value at the end', [...entry({ g: null }), 'g']],
    [
      'its values under other names',
      ['reservation', RESERVATION_ID, 'user', 'ann', 'quantity', '2', 'time', '1800000000123', 'generation', GENERATION],
    ],
  ])('sets aside %s as malformed, fields and all', (_, fields) => {
    expect(decodeReservation(SALE, ENTRY_ID, fields)).toEqual({ ok: false, entryId: ENTRY_ID, fields, reason: 'MALFORMED_ENTRY' });
  });
});
