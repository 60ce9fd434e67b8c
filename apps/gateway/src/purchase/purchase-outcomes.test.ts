import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/config';
import { createReconcileJobs, type ReconcileJobs } from '@flashsale/jobs';
import { createLiveSale, createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer } from '../../../../test/support/http.ts';
import { manualClock } from '../../../../test/support/clock.ts';
import { createApp } from '../app.ts';
import { createGatewayMetrics, type GatewayMetrics } from '../metrics.ts';

// The app built around a metrics object of the test's own, so the counter read is exactly this app's,
// and a clock of its own, so the rate limiter's second ends only when the test says.
const clock = manualClock();
let ctx: TestContext;
let jobs: ReconcileJobs;
let metrics: GatewayMetrics;
let server: Server;
let url: string;
beforeAll(async () => {
  ctx = createTestContext({ RATE_LIMIT_PER_SECOND: '1' });
  jobs = createReconcileJobs(ctx.config.REDIS_URL, ctx.config.REDIS_PREFIX);
  metrics = createGatewayMetrics();
  const app = createApp({ config: ctx.config, redis: ctx.redis, prisma: ctx.prisma, logger: createLogger('gateway-test', 'silent'), jobs, now: clock.now }, metrics);
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await jobs.close();
  await ctx.close();
});

async function outcomes(): Promise<Record<string, number>> {
  const counted: Record<string, number> = {};
  for (const { labels, value } of (await metrics.purchases.get()).values) counted[String(labels.outcome)] = value;
  return counted;
}

describe('flashsale_purchases_total', () => {
  it('counts every answer of the purchase endpoint under its code, the refusals before the reserve script included', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const send = async (init: { token?: string | null; contentType?: string; body?: string | Uint8Array; saleId?: string }) => {
      const headers: Record<string, string> = init.token === null ? {} : bearer(init.token ?? (buyerToken(`buyer-${randomUUID()}`)));
      if (init.contentType) headers['content-type'] = init.contentType;
      return (await fetch(`${url}/api/sales/${init.saleId ?? sale.id}/purchase`, { method: 'POST', headers, body: init.body })).status;
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
