import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createOrderStore, type SaleRecord } from '@flashsale/order-store';
import { createLiveSale, redisNow, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

async function getSale(saleId: number | string): Promise<Response> {
  return fetch(`${gateway.url}/api/sales/${saleId}`);
}

/** The body GET /api/sales/:id answers for a sale, with the live figures given. */
function saleView(sale: SaleRecord, remaining: number, status: string) {
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    remaining,
    startsAt: new Date(sale.startsAt).toISOString(),
    endsAt: new Date(sale.endsAt).toISOString(),
    perUserLimit: sale.perUserLimit,
    status,
  };
}

describe('GET /api/sales/:saleId', () => {
  it('shows a sale that has not started as scheduled', async () => {
    const sale = await createLiveSale(ctx, { stock: 4, startsIn: 60_000, name: 'Scheduled sale' });

    const res = await getSale(sale.id);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(saleView(sale, 4, 'scheduled'));
  });

  it('shows a running sale as active with its remaining stock', async () => {
    const sale = await createLiveSale(ctx, { stock: 4, perUserLimit: 2 });
    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { ...bearer(buyerToken(`buyer-${randomUUID()}`)), 'content-type': 'application/json' },
      body: '{"quantity":2}',
    });
    expect(res.status).toBe(202);

    expect(await (await getSale(sale.id)).json()).toEqual(saleView(sale, 2, 'active'));
  });

  it('shows a sale with nothing left as sold_out', async () => {
    const sale = await createLiveSale(ctx, { stock: 1 });
    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: bearer(buyerToken(`buyer-${randomUUID()}`)),
    });
    expect(res.status).toBe(202);

    expect(await (await getSale(sale.id)).json()).toEqual(saleView(sale, 0, 'sold_out'));
  });

  it('shows a sale past its end as ended', async () => {
    const sale = await createLiveSale(ctx, { stock: 4, startsIn: -120_000, endsIn: -60_000 });

    expect(await (await getSale(sale.id)).json()).toEqual(saleView(sale, 4, 'ended'));
  });

  it('shows a paused sale as paused', async () => {
    const sale = await createLiveSale(ctx, { stock: 4 });
    await ctx.store.sale(sale.id).setPaused(true);

    expect(await (await getSale(sale.id)).json()).toEqual(saleView(sale, 4, 'paused'));
  });

  it('shows a sale MySQL holds but Redis does not as paused, with the stock MySQL has not sold', async () => {
    const now = await redisNow(ctx.redis);
    const sale = await createOrderStore(ctx.prisma).insertSale({
      name: 'Not live',
      stock: 6,
      perUserLimit: 1,
      startsAt: new Date(now - 60_000),
      endsAt: new Date(now + 3_600_000),
    });
    await ctx.prisma.sale.update({ where: { id: sale.id }, data: { soldUnits: 2 } });

    expect(await (await getSale(sale.id)).json()).toEqual(saleView(sale, 4, 'paused'));
  });

  it('answers an unknown sale with 404 SALE_NOT_FOUND', async () => {
    await expectProblem(await getSale(2_147_483_647), 404, 'SALE_NOT_FOUND', 'no sale has the id 2147483647');
  });

  it('answers a sale id that is not a number with 404 SALE_NOT_FOUND', async () => {
    await expectProblem(await getSale('abc'), 404, 'SALE_NOT_FOUND', 'no sale has the id abc');
  });
});
