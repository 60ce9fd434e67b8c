import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { SaleRecord } from '@flashsale/order-store';
import { createLiveSale, type TestContext } from '../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer } from '../../../test/support/http.ts';
import { manualClock } from '../../../test/support/clock.ts';

let ctx: TestContext;
let gateway: TestGateway;
let sale: SaleRecord;
const clock = manualClock();
gatewayPerFile(
  async (started, server) => {
    ctx = started;
    gateway = server;
    sale = await createLiveSale(ctx, { stock: 100, perUserLimit: 2 });
  },
  { now: clock.now },
);

/** The answer to a request, less what differs by nature between two reservations. */
async function answer(path: string, init: { contentType?: string; body?: string; token?: string }) {
  const headers: Record<string, string> = bearer(init.token ?? buyerToken(`buyer-${randomUUID()}`));
  if (init.contentType) headers['content-type'] = init.contentType;
  const res = await fetch(`${gateway.url}${path}`, { method: 'POST', headers, body: init.body });
  const body = (await res.json()) as Record<string, unknown>;
  if (typeof body.reservationId === 'string') body.reservationId = body.reservationId.replace(/-[0-9a-f-]{36}$/, '-<uuid>');
  return { status: res.status, contentType: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after'), body };
}

describe('the purchase route', () => {
  const canonical = (saleId: number | string) => `/api/sales/${saleId}/purchase`;
  // The spellings Express's router reads as the same path, which the rest of the API accepts too.
  const spellings: [string, (saleId: number | string) => string][] = [
    ['a trailing slash', (saleId) => `/api/sales/${saleId}/purchase/`],
    ['other letter case', (saleId) => `/API/Sales/${saleId}/PURCHASE`],
    [
      'a percent-encoded sale id',
      (saleId) => `/api/sales/${[...String(saleId)].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}/purchase`,
    ],
    ['a query', (saleId) => `/api/sales/${saleId}/purchase?via=link`],
  ];
  const requests: [string, { contentType?: string; body?: string; saleId?: string }][] = [
    ['no body', {}],
    ['a quantity', { contentType: 'application/json', body: '{"quantity":2}' }],
    ['malformed JSON', { contentType: 'application/json', body: '{"quantity":' }],
    ['an unknown field', { contentType: 'application/json', body: '{"quantity":1,"userId":"x"}' }],
    ['a quantity above the limit', { contentType: 'application/json', body: '{"quantity":3}' }],
    ['a body over 1 KB', { contentType: 'application/json', body: JSON.stringify({ padding: 'x'.repeat(1100) }) }],
    ['a text/plain body', { contentType: 'text/plain', body: '{}' }],
    ['a sale id that is not a number', { saleId: 'abc' }],
  ];

  it.each(spellings.flatMap(([spelling, path]) => requests.map(([request, init]) => [spelling, request, path, init] as const)))(
    'answers a path with %s exactly as the path itself, for %s',
    async (_spelling, _request, path, { saleId, ...init }) => {
      const id = saleId ?? sale.id;

      const viaSpelling = await answer(path(id), init);
      const viaCanonical = await answer(canonical(id), init);

      expect(viaSpelling).toEqual(viaCanonical);
    },
  );

  it('answers OPTIONS with Allow: POST, as Express answers a path routed for POST only', async () => {
    const res = await fetch(`${gateway.url}${canonical(sale.id)}`, { method: 'OPTIONS' });

    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe('POST');
  });

  it('spends one rate limit whatever the spelling', async () => {
    const token = buyerToken(`buyer-${randomUUID()}`);
    // The gateway's clock stands still: all 11 requests fall in one second of the limiter.
    clock.nextSecond();
    const statuses: number[] = [];
    const [, trailingSlash] = spellings[0]!;
    // The default budget is 10 a second: the 11th request of one buyer is refused whichever way it came.
    for (let i = 0; i < 11; i += 1)
      statuses.push((await answer(i % 2 === 0 ? trailingSlash(sale.id) : canonical(sale.id), { token })).status);

    expect(statuses).toEqual([202, ...Array(9).fill(409), 429]);
  });
});
