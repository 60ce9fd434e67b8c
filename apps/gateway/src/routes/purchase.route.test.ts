import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLiveSale, createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { ordersOfSale, snapshotSale } from '../../../../test/support/sale-snapshot.ts';
import { manualClock } from '../../../../test/support/clock.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const newBuyer = () => `buyer-${randomUUID()}`;

async function purchase(url: string, saleId: number | string, userId: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = bearer(buyerToken(userId));
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${url}/api/sales/${saleId}/purchase`, {
    method: 'POST',
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Runs a request that must be refused and proves it changed nothing in Redis or MySQL. */
async function expectNoChange(saleId: number, request: () => Promise<void>): Promise<void> {
  const before = await snapshotSale(ctx, saleId);
  await request();
  expect(await snapshotSale(ctx, saleId)).toEqual(before);
  expect(await ordersOfSale(ctx, saleId)).toBe(0);
}

describe('POST /api/sales/:saleId/purchase', () => {
  it('accepts a purchase with 202 and a pending reservation, taken from stock in Redis', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
    const buyer = newBuyer();

    const res = await purchase(gateway.url, sale.id, buyer, { quantity: 2 });

    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = (await res.json()) as { reservationId: string };
    expect(body).toEqual({ reservationId: body.reservationId, saleId: sale.id, quantity: 2, status: 'pending' });
    expect(body.reservationId).toMatch(new RegExp(`^${sale.id}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`));
    const snapshot = await snapshotSale(ctx, sale.id);
    expect(snapshot.meta.remaining).toBe('8');
    expect(snapshot.buyers).toEqual({ [buyer]: expect.stringMatching(new RegExp(`^${body.reservationId}\\|2\\|\\d+$`)) });
    expect(snapshot.streamLength).toBe(1);
  });

  it('treats a request without a body as quantity 1', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });

    const res = await purchase(gateway.url, sale.id, newBuyer());

    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ saleId: sale.id, quantity: 1, status: 'pending' });
    expect((await snapshotSale(ctx, sale.id)).meta.remaining).toBe('9');
  });

  it('treats an empty JSON body and an empty object as quantity 1', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });

    const empty = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { ...bearer(buyerToken(newBuyer())), 'content-type': 'application/json' },
      body: '',
    });
    const emptyObject = await purchase(gateway.url, sale.id, newBuyer(), {});

    expect([empty.status, emptyObject.status]).toEqual([202, 202]);
    expect([
      ((await empty.json()) as { quantity: number }).quantity,
      ((await emptyObject.json()) as { quantity: number }).quantity,
    ]).toEqual([1, 1]);
    expect((await snapshotSale(ctx, sale.id)).meta.remaining).toBe('8');
  });

  it('refuses a request without a buyer token with 401 UNAUTHORIZED', async () => {
    const sale = await createLiveSale(ctx);

    await expectNoChange(sale.id, async () => {
      const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, { method: 'POST' });
      await expectProblem(res, 401, 'UNAUTHORIZED', 'an Authorization: Bearer token is required');
    });
  });

  it('refuses a purchase before the start with 403 SALE_NOT_STARTED', async () => {
    const sale = await createLiveSale(ctx, { startsIn: 60_000 });

    await expectNoChange(sale.id, async () => {
      await expectProblem(await purchase(gateway.url, sale.id, newBuyer()), 403, 'SALE_NOT_STARTED');
    });
  });

  it('refuses a purchase for an unknown sale with 404 SALE_NOT_FOUND', async () => {
    await expectProblem(await purchase(gateway.url, 2_147_483_647, newBuyer()), 404, 'SALE_NOT_FOUND');
  });

  it.each(['abc', '0', '01', '-1', '1.5', '2147483648'])('refuses the sale id %j with 404 SALE_NOT_FOUND', async (saleId) => {
    await expectProblem(await purchase(gateway.url, saleId, newBuyer()), 404, 'SALE_NOT_FOUND', `no sale has the id ${saleId}`);
  });

  it('rejects a second purchase by the same buyer with 409 ALREADY_PURCHASED and the existing reservation id', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
    const buyer = newBuyer();
    const first = (await (await purchase(gateway.url, sale.id, buyer)).json()) as { reservationId: string };

    await expectNoChange(sale.id, async () => {
      const res = await purchase(gateway.url, sale.id, buyer, { quantity: 2 });
      await expectProblem(res, 409, 'ALREADY_PURCHASED', 'This buyer already has a reservation for this sale', {
        reservationId: first.reservationId,
      });
    });
  });

  it('refuses more than what is left with 409 INSUFFICIENT_STOCK, naming what is left', async () => {
    const sale = await createLiveSale(ctx, { stock: 3, perUserLimit: 2 });
    expect((await purchase(gateway.url, sale.id, newBuyer(), { quantity: 2 })).status).toBe(202);

    await expectNoChange(sale.id, async () => {
      await expectProblem(await purchase(gateway.url, sale.id, newBuyer(), { quantity: 2 }), 409, 'INSUFFICIENT_STOCK', 'only 1 left', {
        remaining: 1,
      });
    });
  });

  it('refuses a purchase once everything is sold with 410 SOLD_OUT', async () => {
    const sale = await createLiveSale(ctx, { stock: 1 });
    expect((await purchase(gateway.url, sale.id, newBuyer())).status).toBe(202);

    await expectNoChange(sale.id, async () => {
      await expectProblem(await purchase(gateway.url, sale.id, newBuyer()), 410, 'SOLD_OUT');
    });
  });

  it('refuses a purchase after the end with 410 SALE_ENDED', async () => {
    const sale = await createLiveSale(ctx, { startsIn: -120_000, endsIn: -60_000 });

    await expectNoChange(sale.id, async () => {
      await expectProblem(await purchase(gateway.url, sale.id, newBuyer()), 410, 'SALE_ENDED');
    });
  });

  it('refuses a purchase while the sale is paused with 503 SALE_PAUSED and Retry-After', async () => {
    const sale = await createLiveSale(ctx);
    await ctx.store.sale(sale.id).setPaused(true);

    await expectNoChange(sale.id, async () => {
      const res = await purchase(gateway.url, sale.id, newBuyer());
      expect(res.headers.get('retry-after')).toBe('2');
      await expectProblem(res, 503, 'SALE_PAUSED', 'The sale is paused, retry shortly');
    });
  });

  it('sells exactly the stock to a concurrent burst of buyers and refuses the rest as sold out', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });

    const responses = await Promise.all(Array.from({ length: 20 }, () => purchase(gateway.url, sale.id, newBuyer())));

    const statuses = responses.map((res) => res.status).sort();
    expect(statuses).toEqual([...Array(5).fill(202), ...Array(15).fill(410)]);
    const snapshot = await snapshotSale(ctx, sale.id);
    expect(snapshot.meta.remaining).toBe('0');
    expect(snapshot.streamLength).toBe(5);
    expect(Object.keys(snapshot.buyers)).toHaveLength(5);
  });

  it('accepts only one of concurrent purchases by the same buyer; the others name its reservation', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const buyer = newBuyer();

    const responses = await Promise.all(Array.from({ length: 5 }, () => purchase(gateway.url, sale.id, buyer)));
    const bodies = (await Promise.all(responses.map((res) => res.json()))) as { reservationId: string }[];

    const accepted = responses.flatMap((res, i) => (res.status === 202 ? [bodies[i]!] : []));
    expect(accepted).toHaveLength(1);
    expect(responses.map((res) => res.status).sort()).toEqual([202, 409, 409, 409, 409]);
    for (const [i, res] of responses.entries()) {
      if (res.status === 409) expect(bodies[i]).toMatchObject({ code: 'ALREADY_PURCHASED', reservationId: accepted[0]!.reservationId });
    }
    expect((await snapshotSale(ctx, sale.id)).streamLength).toBe(1);
  });
});

describe('purchase rate limit', () => {
  it("refuses a buyer's third request within one second with 429 RATE_LIMITED and Retry-After, changing nothing", async () => {
    const limited = createTestContext({ RATE_LIMIT_PER_SECOND: '2' });
    // The limiter counts per second of the gateway's clock, which stands still until the test moves it.
    const clock = manualClock();
    const limitedGateway = await startGateway(limited, { now: clock.now });
    try {
      const sale = await createLiveSale(limited, { stock: 10 });
      const buyer = newBuyer();
      const other = newBuyer();
      expect((await purchase(limitedGateway.url, sale.id, buyer)).status).toBe(202);
      expect((await purchase(limitedGateway.url, sale.id, buyer)).status).toBe(409);
      const before = await snapshotSale(limited, sale.id);

      const third = await purchase(limitedGateway.url, sale.id, buyer);
      const otherBuyer = await purchase(limitedGateway.url, sale.id, other);

      expect(third.headers.get('retry-after')).toBe('1');
      await expectProblem(third, 429, 'RATE_LIMITED', 'Too many requests');
      expect(otherBuyer.status).toBe(202);
      const after = await snapshotSale(limited, sale.id);
      expect(after.buyers).toEqual({ ...before.buyers, [other]: after.buyers[other] });
      expect(after.streamLength).toBe(before.streamLength + 1);
      expect(Number(after.meta.remaining)).toBe(Number(before.meta.remaining) - 1);

      clock.nextSecond();
      await expectProblem(
        await purchase(limitedGateway.url, sale.id, buyer),
        409,
        'ALREADY_PURCHASED',
        'This buyer already has a reservation for this sale',
        {
          reservationId: before.buyers[buyer]!.split('|')[0],
        },
      );
    } finally {
      await limitedGateway.close();
      await limited.close();
    }
  });

  it('counts requests per buyer: a burst of one buyer is cut at the budget within its second', async () => {
    const limited = createTestContext({ RATE_LIMIT_PER_SECOND: '2' });
    const limitedGateway = await startGateway(limited, { now: manualClock().now });
    try {
      const sale = await createLiveSale(limited, { stock: 10 });
      const buyer = newBuyer();
      const token = buyerToken(buyer);

      const responses = await Promise.all(
        Array.from({ length: 5 }, () =>
          fetch(`${limitedGateway.url}/api/sales/${sale.id}/purchase`, { method: 'POST', headers: bearer(token) }),
        ),
      );

      expect(responses.map((res) => res.status).sort()).toEqual([202, 409, 429, 429, 429]);
      const snapshot = await snapshotSale(limited, sale.id);
      expect(snapshot.meta.remaining).toBe('9');
      expect(snapshot.streamLength).toBe(1);
    } finally {
      await limitedGateway.close();
      await limited.close();
    }
  });
});
