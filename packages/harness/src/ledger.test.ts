import { describe, expect, it } from 'vitest';
import { compareFaultLedger, compareLedger, type LedgerOrder } from './ledger.ts';

// The check that decides every end-to-end and fault test: it must see each way a run can go wrong.

const accepted = new Map([
  ['r1', { userId: 'ann', quantity: 1 }],
  ['r2', { userId: 'bob', quantity: 2 }],
]);
const order = (reservationId: string, userId: string, quantity: number, status = 'created'): LedgerOrder => ({
  reservationId,
  userId,
  quantity,
  status,
});
const exact = [order('r1', 'ann', 1), order('r2', 'bob', 2)];
const sale = { remaining: 7, stock: 10 };

describe('compareLedger', () => {
  it.each<[string, LedgerOrder[], { lost: string[]; duplicated: string[]; unexpected: string[]; unitsInDb: number }]>([
    ['every 202 became its order', exact, { lost: [], duplicated: [], unexpected: [], unitsInDb: 3 }],
    ['a 202 with no order is lost', [order('r1', 'ann', 1)], { lost: ['r2'], duplicated: [], unexpected: [], unitsInDb: 1 }],
    [
      'a second order of one reservation is doubled',
      [...exact, order('r1', 'ann', 1)],
      { lost: [], duplicated: ['r1', 'buyer:ann'], unexpected: [], unitsInDb: 4 },
    ],
    [
      'a buyer with two orders is doubled',
      [...exact, order('r9', 'bob', 1)],
      { lost: [], duplicated: ['buyer:bob'], unexpected: ['r9'], unitsInDb: 4 },
    ],
    [
      'an order no 202 answered is unexpected',
      [...exact, order('r3', 'cy', 1)],
      { lost: [], duplicated: [], unexpected: ['r3'], unitsInDb: 4 },
    ],
    [
      'an order of another buyer or quantity than the 202 is a mismatch',
      [order('r1', 'ann', 1), order('r2', 'bob', 1)],
      { lost: [], duplicated: [], unexpected: ['mismatch:r2'], unitsInDb: 2 },
    ],
    [
      'a cancelled order holds no units',
      [order('r1', 'ann', 1), order('r2', 'bob', 2, 'cancelled')],
      { lost: [], duplicated: [], unexpected: [], unitsInDb: 1 },
    ],
  ])('%s', (_, orders, expected) => {
    expect(compareLedger(accepted, orders, sale)).toEqual({ ...expected, ...sale });
  });
});

describe('compareFaultLedger', () => {
  it('counts an order of a buyer whose request got no clear answer as became-an-order, not unexpected', () => {
    const ledger = compareFaultLedger(accepted, [...exact, order('r3', 'cy', 1)], new Set(['cy', 'dee']), sale);

    expect(ledger).toMatchObject({ unexpected: [], unknownBecameOrders: 1, unknownBecameNothing: 1, oversold: 0 });
  });

  it('still flags an unexpected order of a buyer who got a clear answer', () => {
    expect(compareFaultLedger(accepted, [...exact, order('r3', 'cy', 1)], new Set(['dee']), sale).unexpected).toEqual(['r3']);
  });

  it('reports the units sold above stock', () => {
    const orders = [order('r1', 'ann', 1), order('r2', 'bob', 2), ...Array.from({ length: 9 }, (_, i) => order(`x${i}`, `u${i}`, 1))];
    const uncertain = new Set(Array.from({ length: 9 }, (_, i) => `u${i}`));

    expect(compareFaultLedger(accepted, orders, uncertain, { remaining: 0, stock: 10 })).toMatchObject({
      unitsInDb: 12,
      oversold: 2,
      unexpected: [],
    });
  });
});
