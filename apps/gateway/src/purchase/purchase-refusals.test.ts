import { describe, expect, it } from 'vitest';
import { problemDocument, type Problem } from '../problem.ts';
import { refusalOf } from './purchase-handler.ts';

type Refusal = Parameters<typeof refusalOf>[0];

/** Seconds a paused sale asks the buyer to wait (PAUSED_RETRY_AFTER_SECONDS), passed through as given. */
const RETRY_AFTER = 7;
/** The sale the purchase named. */
const SALE_ID = 12;

// One row per refusal of the reserve script, keyed by kind so a new refusal without a row fails to compile.
const REFUSALS: { [K in Refusal['kind']]: [Extract<Refusal, { kind: K }>, number, Problem] } = {
  sale_not_found: [{ kind: 'sale_not_found' }, 404, { code: 'SALE_NOT_FOUND' }],
  sale_ended: [{ kind: 'sale_ended' }, 410, { code: 'SALE_ENDED' }],
  sale_paused: [{ kind: 'sale_paused' }, 503, { code: 'SALE_PAUSED', headers: { 'Retry-After': '7' } }],
  sale_not_started: [{ kind: 'sale_not_started' }, 403, { code: 'SALE_NOT_STARTED' }],
  above_limit: [
    { kind: 'above_limit', limit: 3 },
    400,
    { code: 'INVALID_REQUEST', detail: 'quantity must be at most 3 for this sale', extra: { perUserLimit: 3 } },
  ],
  already_purchased: [
    { kind: 'already_purchased', reservationId: '12-r', quantity: 2 },
    409,
    { code: 'ALREADY_PURCHASED', extra: { reservationId: '12-r' } },
  ],
  sold_out: [{ kind: 'sold_out' }, 410, { code: 'SOLD_OUT' }],
  insufficient_stock: [
    { kind: 'insufficient_stock', remaining: 2 },
    409,
    { code: 'INSUFFICIENT_STOCK', detail: 'only 2 left', extra: { remaining: 2 } },
  ],
  not_admitted: [
    { kind: 'not_admitted' },
    403,
    {
      code: 'NOT_ADMITTED',
      detail: 'this sale is bought through its waiting room: join it (POST /api/sales/12/queue) and buy while your turn runs',
    },
  ],
  rebuy_cooldown: [
    { kind: 'rebuy_cooldown', waitMs: 29_001 },
    429,
    {
      code: 'REBUY_COOLDOWN',
      detail: 'you cancelled or let expire orders in this sale: you may buy again in 30 s',
      extra: { retryAfterSeconds: 30 },
      headers: { 'Retry-After': '30' },
    },
  ],
  order_limit_reached: [
    { kind: 'order_limit_reached', maxOrders: 3 },
    409,
    {
      code: 'ORDER_LIMIT_REACHED',
      detail: 'you have opened 3 orders in this sale, the most it allows; cancelled and expired ones count',
      extra: { maxOrdersPerBuyer: 3 },
    },
  ],
};

describe('refusalOf', () => {
  it.each(Object.entries(REFUSALS))(
    'answers %s with its status, code, detail and members, and nothing else',
    (_, [outcome, status, problem]) => {
      const refusal = refusalOf(outcome, SALE_ID, RETRY_AFTER);

      expect(refusal).toEqual(problem);
      expect(problemDocument(refusal).status).toBe(status);
    },
  );

  it('tells a buyer who already holds a reservation its id, never the quantity they hold', () => {
    const document = problemDocument(refusalOf({ kind: 'already_purchased', reservationId: '12-r', quantity: 2 }, SALE_ID, RETRY_AFTER));

    expect(document).toEqual({
      type: 'https://flashsale.dev/problems/already-purchased',
      title: 'This buyer already has a reservation for this sale',
      status: 409,
      code: 'ALREADY_PURCHASED',
      detail: 'This buyer already has a reservation for this sale',
      reservationId: '12-r',
    });
  });

  it("asks only a paused sale's buyers to retry after the seconds configured, and a buyer in a rebuy cooldown after its own", () => {
    const retrying = Object.values(REFUSALS).filter(([outcome]) => refusalOf(outcome, SALE_ID, 30).headers !== undefined);

    expect(retrying.map(([outcome]) => [outcome.kind, refusalOf(outcome, SALE_ID, 30).headers])).toEqual([
      ['sale_paused', { 'Retry-After': '30' }],
      ['rebuy_cooldown', { 'Retry-After': '30' }],
    ]);
  });
});
