import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { saleKeys } from '@flashsale/redis-store';
import { createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { createLogger } from '@flashsale/runtime';
import { createGateway } from '../gateway.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const saleBody = (name: string, stock = 5) => ({ name, stock, startsAt: '2030-01-01T00:00:00.000Z', endsAt: '2030-01-02T00:00:00.000Z' });

function createSale(url: string, token: string, body: unknown, key?: string): Promise<Response> {
  return fetch(`${url}/api/admin/sales`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify(body),
  });
}

describe('POST /api/admin/sales with an Idempotency-Key', () => {
  it('answers a retry with the same key and body with the first sale, and makes no second one', async () => {
    const name = `Idempotent ${randomUUID()}`;
    const key = randomUUID();
    const first = await createSale(gateway.url, ctx.config.ADMIN_TOKEN, saleBody(name), key);
    expect(first.status).toBe(201);
    const created = (await first.json()) as { id: number };

    // The same request, with its members in another order: the same request.
    const { stock, ...rest } = saleBody(name);
    const again = await createSale(gateway.url, ctx.config.ADMIN_TOKEN, { ...rest, stock }, key);

    expect(again.status).toBe(201);
    expect(await again.json()).toEqual(created);
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(1);
  });

  it('refuses the same key with another body with 422 IDEMPOTENCY_KEY_REUSED, creating nothing', async () => {
    const name = `Idempotent ${randomUUID()}`;
    const key = randomUUID();
    expect((await createSale(gateway.url, ctx.config.ADMIN_TOKEN, saleBody(name), key)).status).toBe(201);

    await expectProblem(
      await createSale(gateway.url, ctx.config.ADMIN_TOKEN, saleBody(name, 6), key),
      422,
      'IDEMPOTENCY_KEY_REUSED',
      'this Idempotency-Key was used with another request body',
    );
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(1);
  });

  it.each([
    ['empty', ''],
    ['with a space', 'key with space'],
    ['longer than 255 characters', 'k'.repeat(256)],
  ])('refuses a key that is %s with 400, creating nothing', async (_, key) => {
    const name = `Idempotent ${randomUUID()}`;

    await expectProblem(
      await createSale(gateway.url, ctx.config.ADMIN_TOKEN, saleBody(name), key),
      400,
      'INVALID_REQUEST',
      'Idempotency-Key must be 1 to 255 visible ASCII characters',
    );
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(0);
  });
});

describe('POST /api/admin/sales while Redis is unreachable', () => {
  it('answers 503 and leaves an unfinished create that nothing watches or sells; its key answers "retry shortly", never a second sale', async () => {
    // The same database and prefix, but a Redis nobody listens on.
    const down = createTestContext({ REDIS_PREFIX: ctx.config.REDIS_PREFIX, REDIS_URL: 'redis://127.0.0.1:1' });
    // The gateway not started: the create path needs neither the sale events subscription nor the reconcile queue.
    const { listener } = createGateway({
      config: down.config,
      sales: down.sales,
      dashboardSales: down.sales,
      logger: createLogger('test', 'silent'),
      readiness: undefined as never,
    });
    const server = createServer(listener).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const broken = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () => new Promise((resolve) => server.close(resolve)),
    };
    const name = `Created during an outage ${randomUUID()}`;
    const key = randomUUID();
    try {
      const res = await createSale(broken.url, down.config.ADMIN_TOKEN, saleBody(name), key);
      expect({
        status: res.status,
        code: ((await res.json()) as { code: string }).code,
        retryAfter: res.headers.get('retry-after'),
      }).toEqual({
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
        retryAfter: '1',
      });
    } finally {
      await broken.close();
      down.redis.disconnect();
      await down.prisma.$disconnect();
    }
    const [row] = await ctx.prisma.sale.findMany({ where: { name } });
    // The request could not take its row back through Redis: it stays unfinished for the reconciler,
    // which abandons it; nothing watches or sells it meanwhile.
    expect(row?.publishState).toBe('publishing');
    expect((await fetch(`${gateway.url}/api/sales/${row!.id}`)).status).toBe(404);
    expect(await ctx.store.sale(row!.id).state()).toBeNull();

    // While the first attempt is unfinished, its key answers "retry shortly", never a second sale.
    await expectProblem(
      await createSale(gateway.url, ctx.config.ADMIN_TOKEN, saleBody(name), key),
      503,
      'SERVICE_UNAVAILABLE',
      'the first request with this Idempotency-Key has not finished yet; retry shortly',
      {},
    );
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(1);
    expect(await ctx.redis.exists(saleKeys(ctx.config.REDIS_PREFIX, row!.id).meta)).toBe(0);
  });
});
