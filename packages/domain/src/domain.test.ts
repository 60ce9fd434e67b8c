import { describe, expect, it } from 'vitest';
import { MAX_SALE_ID, newReservationId, parseSaleId, saleIdOfReservation, saleStatus, type SaleClockView } from './index.ts';

const STARTS = 1_000_000;
const ENDS = 2_000_000;
const sale = (overrides: Partial<SaleClockView> = {}): SaleClockView => ({
  startsAt: STARTS,
  endsAt: ENDS,
  remaining: 5,
  paused: false,
  ...overrides,
});

describe('saleStatus', () => {
  it('is scheduled before the start', () => {
    expect(saleStatus(sale(), STARTS - 1)).toBe('scheduled');
  });

  it('is active from the start instant: the start is inclusive', () => {
    expect(saleStatus(sale(), STARTS)).toBe('active');
  });

  it('is active until the last millisecond before the end', () => {
    expect(saleStatus(sale(), ENDS - 1)).toBe('active');
  });

  it('is ended at the end instant: the end is exclusive', () => {
    expect(saleStatus(sale(), ENDS)).toBe('ended');
    expect(saleStatus(sale(), ENDS + 1)).toBe('ended');
  });

  it('is sold out when nothing is left during the sale', () => {
    expect(saleStatus(sale({ remaining: 0 }), STARTS)).toBe('sold_out');
  });

  it('is paused while paused, whatever the stock and even before the start', () => {
    expect(saleStatus(sale({ paused: true }), STARTS)).toBe('paused');
    expect(saleStatus(sale({ paused: true, remaining: 0 }), STARTS)).toBe('paused');
    expect(saleStatus(sale({ paused: true }), STARTS - 1)).toBe('paused');
  });

  it('is ended once over, even when paused or sold out', () => {
    expect(saleStatus(sale({ paused: true }), ENDS)).toBe('ended');
    expect(saleStatus(sale({ remaining: 0 }), ENDS)).toBe('ended');
  });

  it('is scheduled, not sold out, before the start of a sale with no stock left', () => {
    expect(saleStatus(sale({ remaining: 0 }), STARTS - 1)).toBe('scheduled');
  });
});

describe('reservation ids', () => {
  it('name their sale and round-trip through saleIdOfReservation', () => {
    const id = newReservationId(42);

    expect(id).toMatch(/^42-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(saleIdOfReservation(id)).toBe(42);
    expect(saleIdOfReservation(newReservationId(MAX_SALE_ID))).toBe(MAX_SALE_ID);
  });

  it("carry the millisecond they were made in (a version 7 uuid), so a sale's ids sort by time", () => {
    const before = Date.now();
    const first = newReservationId(7);
    const made = Array.from({ length: 2000 }, () => newReservationId(7));
    const after = Date.now();
    const millisecondOf = (id: string) => parseInt(id.slice(2, 15).replace('-', ''), 16);

    expect(millisecondOf(first)).toBeGreaterThanOrEqual(before);
    expect(millisecondOf(made.at(-1)!)).toBeLessThanOrEqual(after);
    // Ids of later milliseconds sort after earlier ones: the order MySQL's unique key receives them in.
    const stamps = made.map(millisecondOf);
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    const byTime = made.filter((id, i) => i === 0 || millisecondOf(id) > millisecondOf(made[i - 1]!));
    expect(byTime).toEqual([...byTime].sort());
  });

  it('keep 74 random bits: ids of one millisecond differ', () => {
    const ids = Array.from({ length: 500 }, () => newReservationId(3));
    const oneMillisecond = ids.filter((id) => id.slice(0, 17) === ids[0]!.slice(0, 17));

    expect(new Set(oneMillisecond.map((id) => id.slice(17))).size).toBe(oneMillisecond.length);
    expect(new Set(ids.map((id) => id.slice(17, 20))).size).toBeGreaterThan(100);
  });

  it('are unique', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newReservationId(1)));

    expect(ids.size).toBe(1000);
  });

  it.each([
    ['an empty string', ''],
    ['a bare uuid', '0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d'],
    ['a sale id of 0', '0-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d'],
    ['a sale id with a leading zero', '07-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d'],
    ['a negative sale id', '-7-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d'],
    ['a sale id of 11 digits', '12345678901-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d'],
    ['an uppercase uuid', '7-0B7C1D3E-9F00-4A6B-8C1D-2E3F4A5B6C7D'],
    ['a truncated uuid', '7-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7'],
    ['trailing characters', '7-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d0'],
    ['a trailing newline', '7-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d\n'],
    ['a stream entry id', '1700000000000-0'],
    ['garbage', 'not-a-reservation'],
  ])('are not recognised in %s', (_, raw) => {
    expect(saleIdOfReservation(raw)).toBeNull();
  });
});

describe('parseSaleId', () => {
  it.each([
    ['1', 1],
    ['42', 42],
    ['2147483647', 2_147_483_647],
  ])('parses %s', (raw, id) => {
    expect(parseSaleId(raw)).toBe(id);
  });

  it.each(['0', '01', '-1', '1.5', 'abc', '2147483648', '9999999999', '12345678901', '', ' 1', '1 ', '+1', '1e3', '0x1f'])(
    'rejects %j',
    (raw) => {
      expect(parseSaleId(raw)).toBeNull();
    },
  );
});
