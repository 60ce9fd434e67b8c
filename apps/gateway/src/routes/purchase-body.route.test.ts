import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '@flashsale/domain';
import type { SaleRecord } from '@flashsale/order-store';
import { createLiveSale, createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { ordersOfSale, snapshotSale } from '../../../../test/support/sale-snapshot.ts';

let ctx: TestContext;
let gateway: TestGateway;
let sale: SaleRecord;
gatewayPerFile(async (started, server) => {
  ctx = started;
  gateway = server;
  sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
});

const JSON_TYPE = 'application/json';

interface BadBody {
  contentType: string;
  body: string | Uint8Array;
  status: number;
  code: ErrorCode;
  detail: string;
  extra?: Record<string, unknown>;
}

const cases: [string, BadBody][] = [
  [
    'malformed JSON',
    { contentType: JSON_TYPE, body: '{"quantity":', status: 400, code: 'INVALID_REQUEST', detail: 'the body is not valid JSON' },
  ],
  [
    'a JSON string instead of an object',
    { contentType: JSON_TYPE, body: '"1"', status: 400, code: 'INVALID_REQUEST', detail: 'the body is not valid JSON' },
  ],
  [
    'an unknown field (a buyer id in the body is refused, not used)',
    {
      contentType: JSON_TYPE,
      body: '{"quantity":1,"userId":"someone-else"}',
      status: 400,
      code: 'INVALID_REQUEST',
      detail: 'body: Unrecognized key: "userId"',
      extra: { errors: ['body: Unrecognized key: "userId"'] },
    },
  ],
  [
    'an array',
    {
      contentType: JSON_TYPE,
      body: '[1]',
      status: 400,
      code: 'INVALID_REQUEST',
      detail: 'body: Invalid input: expected object, received array',
      extra: { errors: ['body: Invalid input: expected object, received array'] },
    },
  ],
  ...(
    [
      ['0', 'quantity: Too small: expected number to be >=1'],
      ['-1', 'quantity: Too small: expected number to be >=1'],
      ['1.5', 'quantity: Invalid input: expected int, received number'],
      ['"1"', 'quantity: Invalid input: expected number, received string'],
      ['null', 'quantity: Invalid input: expected number, received null'],
    ] as const
  ).map(([quantity, detail]): [string, BadBody] => [
    `quantity ${quantity}`,
    { contentType: JSON_TYPE, body: `{"quantity":${quantity}}`, status: 400, code: 'INVALID_REQUEST', detail, extra: { errors: [detail] } },
  ]),
  [
    "a quantity above the sale's per-user limit",
    {
      contentType: JSON_TYPE,
      body: '{"quantity":3}',
      status: 400,
      code: 'INVALID_REQUEST',
      detail: 'quantity must be at most 2 for this sale',
      extra: { perUserLimit: 2 },
    },
  ],
  [
    'a body over 1 KB',
    {
      contentType: JSON_TYPE,
      body: JSON.stringify({ quantity: 1, padding: 'x'.repeat(1100) }),
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      detail: 'The request body is larger than 1 KB',
    },
  ],
  [
    'a text/plain body',
    {
      contentType: 'text/plain',
      body: '{"quantity":1}',
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      detail: 'send the body as application/json',
    },
  ],
  [
    'a form body',
    {
      contentType: 'application/x-www-form-urlencoded',
      body: 'quantity=1',
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      detail: 'send the body as application/json',
    },
  ],
  // Only UTF-8 is read: body-parser would decode UTF-16 and UTF-7 through iconv, so one request could be
  // spelt in bytes that nothing in front of the gateway reads the way the gateway does.
  ...(
    [
      ['latin1', 'application/json; charset=latin1', Buffer.from('{"quantity":1}', 'latin1')],
      ['UTF-7', 'application/json; charset=utf-7', '{"quantity":1}'],
      ['UTF-16', 'application/json; charset=utf-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"quantity":1}', 'utf16le')])],
      ['UTF-16LE, quoted', 'application/json; charset="UTF-16LE"', Buffer.from('{"quantity":1}', 'utf16le')],
      ['UTF-32, after a UTF-8 charset', 'application/json; charset=utf-8; charset=utf-32', '{"quantity":1}'],
      [
        'UTF-16, as a +json type',
        'application/merge-patch+json; charset=utf-16',
        Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"quantity":1}', 'utf16le')]),
      ],
    ] as const
  ).map(([name, contentType, body]): [string, BadBody] => [
    `a JSON body in ${name}`,
    { contentType, body, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', detail: 'send the body as application/json in UTF-8' },
  ]),
];

describe('POST /api/sales/:saleId/purchase with a bad body', () => {
  it.each(cases)('refuses %s and changes nothing in Redis or MySQL', async (_, bad) => {
    const before = await snapshotSale(ctx, sale.id);

    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { ...bearer(buyerToken(`buyer-${randomUUID()}`)), 'content-type': bad.contentType },
      body: bad.body,
    });

    await expectProblem(res, bad.status, bad.code, bad.detail, bad.extra);
    expect(await snapshotSale(ctx, sale.id)).toEqual(before);
    expect(before.meta.remaining).toBe('10');
    expect(before.streamLength).toBe(0);
    expect(before.buyers).toEqual({});
    expect(await ordersOfSale(ctx, sale.id)).toBe(0);
  });

  it.each(['application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'application/json; charset=utf-8; foo=bar'])(
    'accepts a body sent as %j',
    async (contentType) => {
      const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
        method: 'POST',
        headers: { ...bearer(buyerToken(`buyer-${randomUUID()}`)), 'content-type': contentType },
        body: '{"quantity":1}',
      });

      expect(res.status).toBe(202);
      expect(await res.json()).toMatchObject({ quantity: 1, status: 'pending' });
    },
  );

  it('accepts the largest quantity the sale allows', async () => {
    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { ...bearer(buyerToken(`buyer-${randomUUID()}`)), 'content-type': 'application/json; charset=utf-8' },
      body: '{"quantity":2}',
    });

    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ quantity: 2, status: 'pending' });
  });
});

describe('the body limit, HTTP_MAX_BODY_BYTES', () => {
  it('takes a body up to the limit and refuses a larger one with 413, naming the limit', async () => {
    const roomy = createTestContext({ HTTP_MAX_BODY_BYTES: '2048' });
    const roomyGateway = await startGateway(roomy);
    try {
      const roomySale = await createLiveSale(roomy, { stock: 10 });
      // JSON whitespace pads the body past the default limit of 1 KB, to 1.5 KB, then to 3 KB.
      const purchase = async (bytes: number) =>
        fetch(`${roomyGateway.url}/api/sales/${roomySale.id}/purchase`, {
          method: 'POST',
          headers: { ...bearer(buyerToken(`buyer-${randomUUID()}`)), 'content-type': JSON_TYPE },
          body: '{"quantity":1}'.padEnd(bytes, ' '),
        });

      expect((await purchase(1536)).status).toBe(202);
      await expectProblem(await purchase(3072), 413, 'PAYLOAD_TOO_LARGE', 'The request body is larger than 2 KB');
    } finally {
      await roomyGateway.close();
      await roomy.close();
    }
  });
});
