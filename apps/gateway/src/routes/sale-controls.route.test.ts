import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_STOCK } from '@flashsale/domain';
import { createOrderStore } from '@flashsale/order-store';
import { saleKeys } from '@flashsale/redis-store';
import { buyerToken } from '@flashsale/harness';
import { createIsolatedContext, createLiveSale, redisNow, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const admin = () => bearer(ctx.config.ADMIN_TOKEN);
const control = (saleId: number | string, action: string, headers = admin()) =>
  fetch(`${gateway.url}/api/admin/sales/${saleId}/${action}`, { method: 'POST', headers });
const addStock = (saleId: number | string, body: string, headers = admin()) =>
  fetch(`${gateway.url}/api/admin/sales/${saleId}/stock`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body,
  });
const purchase = (saleId: number) =>
  fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(`buyer-${randomUUID()}`)) });
const row = (saleId: number) => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
const meta = (saleId: number) => ctx.redis.hgetall(saleKeys(ctx.config.REDIS_PREFIX, saleId).meta);

describe('POST /api/admin/sales/:id/pause and /resume', () => {
  it("pauses: 200 with the sale paused, buyers refused 503 SALE_PAUSED with Retry-After, recorded in MySQL and Redis apart from the reconciler's pause", async () => {
    const sale = await createLiveSale(ctx, { stock: 5, name: 'Pause me' });

    const res = await control(sale.id, 'pause');

    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: sale.id,
      name: 'Pause me',
      stock: 5,
      remaining: 5,
      status: 'paused',
      reconciling: false,
      pausedByOperatorAt: expect.any(String),
    });
    const refused = await purchase(sale.id);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(((await refused.json()) as { code: string }).code).toBe('SALE_PAUSED');
    expect(await row(sale.id)).toMatchObject({ operatorPausedAt: new Date(String(body.pausedByOperatorAt)), controlsVersion: 1 });
    expect(await meta(sale.id)).toMatchObject({ op_paused: '1', paused: '0', ctl: '1', remaining: '5' });
    expect(await fetch(`${gateway.url}/api/sales/${sale.id}`).then((r) => r.json())).toMatchObject({ status: 'paused' });
  });

  it('answers a second pause 200 with the sale as it is, changing nothing (a retry after a lost answer)', async () => {
    const sale = await createLiveSale(ctx);
    const first = (await (await control(sale.id, 'pause')).json()) as Record<string, unknown>;

    const again = await control(sale.id, 'pause');

    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(first);
    expect((await row(sale.id)).controlsVersion).toBe(1);
  });

  it('resumes: 200 active, buyers served again; a second resume is 409 SALE_NOT_PAUSED', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    await control(sale.id, 'pause');

    const res = await control(sale.id, 'resume');

    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: sale.id, status: 'active', pausedByOperatorAt: null });
    expect((await purchase(sale.id)).status).toBe(202);
    expect(await meta(sale.id)).toMatchObject({ op_paused: '0', ctl: '2', remaining: '4' });
    await expectProblem(
      await control(sale.id, 'resume'),
      409,
      'SALE_NOT_PAUSED',
      'the sale is not paused by an operator (a reconciliation resumes its own pause)',
    );
  });

  it('does not resume a sale the reconciler paused: 409 SALE_NOT_PAUSED, and the sale stays paused', async () => {
    const sale = await createLiveSale(ctx);
    expect(await ctx.store.sale(sale.id).setPaused(true)).toBe(true);

    await expectProblem(
      await control(sale.id, 'resume'),
      409,
      'SALE_NOT_PAUSED',
      'the sale is not paused by an operator (a reconciliation resumes its own pause)',
    );

    expect((await purchase(sale.id)).status).toBe(503);
  });
});

describe('POST /api/admin/sales/:id/close', () => {
  it("ends the sale now in MySQL and Redis (Redis's clock): 200 ended, buyers 410 SALE_ENDED; closing again 409 SALE_ALREADY_ENDED", async () => {
    const sale = await createLiveSale(ctx);
    const before = await redisNow(ctx.redis);

    const res = await control(sale.id, 'close');

    expect(res.status).toBe(200);
    const body = (await res.json()) as { endsAt: string; status: string };
    expect(body.status).toBe('ended');
    const endsAt = new Date(body.endsAt).getTime();
    expect(endsAt).toBeGreaterThanOrEqual(before);
    expect(endsAt).toBeLessThanOrEqual(await redisNow(ctx.redis));
    expect((await row(sale.id)).endsAt.getTime()).toBe(endsAt);
    expect(await meta(sale.id)).toMatchObject({ ends: String(endsAt) });
    expect(((await (await purchase(sale.id)).json()) as { code: string }).code).toBe('SALE_ENDED');
    const ended = `the sale ended at ${body.endsAt}`;
    await expectProblem(await control(sale.id, 'close'), 409, 'SALE_ALREADY_ENDED', `${ended}: it cannot be closed again`);
    await expectProblem(await control(sale.id, 'pause'), 409, 'SALE_ALREADY_ENDED', `${ended}: it cannot be paused`);
    await expectProblem(await addStock(sale.id, '{"add":1}'), 409, 'SALE_ALREADY_ENDED', `${ended}: it cannot be given more stock`);
    expect((await row(sale.id)).controlsVersion).toBe(1);
  });

  it('closes a sale that has not started: ended, never sells', async () => {
    const sale = await createLiveSale(ctx, { startsIn: 3_600_000, endsIn: 7_200_000 });

    expect(await (await control(sale.id, 'close')).json()).toMatchObject({ status: 'ended' });
    expect(((await (await purchase(sale.id)).json()) as { code: string }).code).toBe('SALE_ENDED');
  });
});

describe('POST /api/admin/sales/:id/stock', () => {
  it('adds units to a sold-out sale: stock and remaining raised together, buyers served again at once', async () => {
    const sale = await createLiveSale(ctx, { stock: 2 });
    for (let i = 0; i < 2; i++) expect((await purchase(sale.id)).status).toBe(202);
    // Twice: the second refusal is what this gateway caches as a verdict, which the announcement must drop.
    expect((await purchase(sale.id)).status).toBe(410);
    expect((await purchase(sale.id)).status).toBe(410);

    const res = await addStock(sale.id, '{"add":3}');

    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ stock: 5, remaining: 3, status: 'active' });
    expect(await meta(sale.id)).toMatchObject({ stock: '5', remaining: '3', ctl: '1' });
    expect(await row(sale.id)).toMatchObject({ stock: 5, controlsVersion: 1 });
    expect((await purchase(sale.id)).status).toBe(202);
  });

  it('applies concurrent additions each exactly once, in MySQL and Redis alike', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    expect((await purchase(sale.id)).status).toBe(202);

    const answers = await Promise.all(Array.from({ length: 8 }, () => addStock(sale.id, '{"add":5}')));

    expect(answers.map((res) => res.status)).toEqual(Array(8).fill(200));
    expect(await row(sale.id)).toMatchObject({ stock: 50, controlsVersion: 8 });
    expect(await meta(sale.id)).toMatchObject({ stock: '50', remaining: '49', ctl: '8' });
  });

  it.each([
    ['{"add":0}', 'add: Too small: expected number to be >=1'],
    ['{"add":-3}', 'add: Too small: expected number to be >=1'],
    ['{"add":1.5}', 'add: Invalid input: expected int, received number'],
    ['{"add":"5"}', 'add: Invalid input: expected number, received string'],
    ['{}', 'add: Invalid input: expected number, received undefined'],
    ['{"add":1,"remove":1}', 'body: Unrecognized key: "remove"'],
  ])('refuses %s: 400 INVALID_REQUEST, nothing changed', async (body, detail) => {
    const sale = await createLiveSale(ctx, { stock: 4 });

    await expectProblem(await addStock(sale.id, body), 400, 'INVALID_REQUEST', detail, { errors: [detail] });

    expect(await row(sale.id)).toMatchObject({ stock: 4, controlsVersion: 0 });
    expect(await meta(sale.id)).toMatchObject({ stock: '4', remaining: '4' });
  });

  it('refuses a stock above the most a sale may hold: 400, nothing changed', async () => {
    const sale = await createLiveSale(ctx, { stock: 4 });

    await expectProblem(
      await addStock(sale.id, `{"add":${MAX_STOCK}}`),
      400,
      'INVALID_REQUEST',
      `add: the stock would exceed ${MAX_STOCK} units (it is 4)`,
    );
    expect((await row(sale.id)).stock).toBe(4);
  });

  it('refuses a body that is not JSON: 400, or 415 for another media type', async () => {
    const sale = await createLiveSale(ctx);

    await expectProblem(await addStock(sale.id, '{"add":'), 400, 'INVALID_REQUEST', 'the body is not valid JSON');
    const text = await fetch(`${gateway.url}/api/admin/sales/${sale.id}/stock`, {
      method: 'POST',
      headers: { ...admin(), 'content-type': 'text/plain' },
      body: 'add=1',
    });
    expect(text.status).toBe(415);
  });
});

describe('every control', () => {
  it.each(['pause', 'resume', 'close'])('%s: 404 SALE_NOT_FOUND for no sale, 401 without the admin token', async (action) => {
    const sale = await createLiveSale(ctx);

    await expectProblem(await control(2_000_000_000, action), 404, 'SALE_NOT_FOUND', 'no sale has the id 2000000000');
    await expectProblem(await control('abc', action), 404, 'SALE_NOT_FOUND', 'no sale has the id abc');
    await expectProblem(await control(sale.id, action, {}), 401, 'UNAUTHORIZED', 'an Authorization: Bearer token is required');
    await expectProblem(await control(sale.id, action, bearer('x'.repeat(20))), 401, 'UNAUTHORIZED', 'the admin token is not valid');
    expect((await row(sale.id)).controlsVersion).toBe(0);
  });

  it('completes a control whose process died between MySQL and Redis when the operator retries it', async () => {
    const sale = await createLiveSale(ctx);
    // The crash point: MySQL committed the pause, the Redis script never ran.
    await createOrderStore(ctx.prisma)
      .sale(sale.id)
      .control(await redisNow(ctx.redis), () => ({ kind: 'change', change: { operatorPaused: true } }));
    expect((await purchase(sale.id)).status).toBe(202);

    const retried = await control(sale.id, 'pause');

    expect(retried.status).toBe(200);
    expect(await ctx.store.sale(sale.id).state()).toMatchObject({
      operatorPaused: true,
      controlsVersion: 1,
    });
    expect((await purchase(sale.id)).status).toBe(503);
  });
});

describe('GET /api/admin/sales', () => {
  it('lists the sales newest first, a page at a time, each with its live state (on a database of its own)', async () => {
    const own = await createIsolatedContext();
    const ownGateway = await startGateway(own);
    try {
      const [a, b, c] = [
        await createLiveSale(own, { name: 'a', stock: 3 }),
        await createLiveSale(own, { name: 'b' }),
        await createLiveSale(own, { name: '<img src=x onerror=alert(1)>' }),
      ];
      const list = (query: string, headers = bearer(own.config.ADMIN_TOKEN)) =>
        fetch(`${ownGateway.url}/api/admin/sales${query}`, { headers });
      await fetch(`${ownGateway.url}/api/admin/sales/${b.id}/pause`, { method: 'POST', headers: bearer(own.config.ADMIN_TOKEN) });

      const first = (await (await list('?limit=2')).json()) as {
        sales: { id: number; name: string; status: string }[];
        nextCursor: string;
      };
      expect(first.sales.map((sale) => [sale.id, sale.name, sale.status])).toEqual([
        [c.id, '<img src=x onerror=alert(1)>', 'active'],
        [b.id, 'b', 'paused'],
      ]);
      expect(first.nextCursor).toBe(String(b.id));
      const second = await (await list(`?limit=2&cursor=${first.nextCursor}`)).json();
      expect(second).toEqual({
        sales: [expect.objectContaining({ id: a.id, name: 'a', stock: 3, remaining: 3, status: 'active', reconciling: false })],
        nextCursor: null,
      });

      await expectProblem(await list('?limit=0'), 400, 'INVALID_REQUEST', 'limit: must be a whole number from 1 to 100', {
        errors: ['limit: must be a whole number from 1 to 100'],
      });
      await expectProblem(await list('?cursor=abc'), 400, 'INVALID_REQUEST', 'cursor: must be the nextCursor of a previous page', {
        errors: ['cursor: must be the nextCursor of a previous page'],
      });
      await expectProblem(await list('', {}), 401, 'UNAUTHORIZED', 'an Authorization: Bearer token is required');
    } finally {
      await ownGateway.close();
      await own.close();
    }
  });
});
