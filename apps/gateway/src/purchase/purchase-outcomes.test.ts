import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer } from '../../../../test/support/http.ts';
import { manualClock } from '../../../../test/support/clock.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';

// A gateway of the file's own, so the counter read is exactly its metrics', with a clock of its own, so
// the rate limiter's second ends only when the test says.
const clock = manualClock();
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  { env: { RATE_LIMIT_PER_SECOND: '1' }, now: clock.now },
);

async function outcomes(): Promise<Record<string, number>> {
  const counted: Record<string, number> = {};
  for (const { labels, value } of (await gateway.gateway.metrics.purchases.get()).values) counted[String(labels.outcome)] = value;
  return counted;
}

describe('flashsale_purchases_total', () => {
  it('counts every answer of the purchase endpoint under its code, the refusals before the reserve script included', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const send = async (init: { token?: string | null; contentType?: string; body?: string | Uint8Array; saleId?: string }) => {
      const headers: Record<string, string> = init.token === null ? {} : bearer(init.token ?? buyerToken(`buyer-${randomUUID()}`));
      if (init.contentType) headers['content-type'] = init.contentType;
      return (await fetch(`${gateway.url}/api/sales/${init.saleId ?? sale.id}/purchase`, { method: 'POST', headers, body: init.body }))
        .status;
    };
    const repeater = buyerToken('repeater');

    const statuses = [
      await send({ token: null }),
      await send({ token: 'not-a-jwt' }),
      await send({ contentType: 'text/plain', body: '{}' }),
      await send({ contentType: 'application/json; charset=utf-16', body: Buffer.from('{}', 'utf16le') }),
      await send({ contentType: 'application/json', body: '{"quantity":' }),
      await send({ contentType: 'application/json', body: JSON.stringify({ padding: 'x'.repeat(1100) }) }),
      await send({ saleId: 'abc' }),
    ];
    clock.nextSecond();
    statuses.push(await send({ token: repeater }), await send({ token: repeater }));

    expect(statuses).toEqual([401, 401, 415, 415, 400, 413, 404, 202, 429]);
    expect(await outcomes()).toEqual({
      UNAUTHORIZED: 2,
      UNSUPPORTED_MEDIA_TYPE: 2,
      INVALID_REQUEST: 1,
      PAYLOAD_TOO_LARGE: 1,
      SALE_NOT_FOUND: 1,
      reserved: 1,
      RATE_LIMITED: 1,
    });
  });
});
