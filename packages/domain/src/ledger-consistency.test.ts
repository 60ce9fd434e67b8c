import { describe, expect, it } from 'vitest';
import { ledgerConsistent, type LedgerCounts } from './ledger-consistency.ts';

describe('ledgerConsistent', () => {
  it.each<[string, boolean, LedgerCounts]>([
    ['nothing sold yet', true, { stock: 10, remaining: 10, inFlight: 0, unitsInDb: 0 }],
    ['every sale written: remaining + units in MySQL = stock', true, { stock: 10, remaining: 4, inFlight: 0, unitsInDb: 6 }],
    ['sold out and written', true, { stock: 10, remaining: 0, inFlight: 0, unitsInDb: 10 }],
    [
      'nothing in flight, a unit in neither count (taken in Redis, never written)',
      false,
      { stock: 10, remaining: 4, inFlight: 0, unitsInDb: 5 },
    ],
    [
      'nothing in flight, a unit in both counts (written, and still remaining in Redis)',
      false,
      { stock: 10, remaining: 5, inFlight: 0, unitsInDb: 6 },
    ],
    ['entries in flight, their units in neither count yet', true, { stock: 10, remaining: 4, inFlight: 3, unitsInDb: 3 }],
    ['entries in flight, Redis and MySQL at exactly the stock', true, { stock: 10, remaining: 4, inFlight: 1, unitsInDb: 6 }],
    ['entries in flight, a unit in both counts', false, { stock: 10, remaining: 5, inFlight: 1, unitsInDb: 6 }],
    ['more units in MySQL than the stock, whatever Redis says', false, { stock: 10, remaining: 0, inFlight: 0, unitsInDb: 11 }],
    ['more units in MySQL than the stock, entries in flight', false, { stock: 10, remaining: 0, inFlight: 2, unitsInDb: 11 }],
    [
      'more units in MySQL than the stock, though a negative remaining in Redis makes the sum come out',
      false,
      { stock: 10, remaining: -1, inFlight: 0, unitsInDb: 11 },
    ],
    ['no state in Redis (lost, or never published)', false, { stock: 10, remaining: null, inFlight: 0, unitsInDb: 0 }],
    ['no state in Redis, MySQL holding the whole stock', false, { stock: 10, remaining: null, inFlight: 0, unitsInDb: 10 }],
  ])('%s: consistent %s', (_, consistent, counts) => {
    expect(ledgerConsistent(counts)).toBe(consistent);
  });
});
