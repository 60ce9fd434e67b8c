import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { saleKeys } from '@flashsale/redis-store';
import { createOrderStore } from '@flashsale/order-store';
import { createLiveSale, redisNow, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { manualClock } from '../../../../test/support/clock.ts';

let ctx: TestContext;
let gateway: TestGateway;
// A long TTL, so only an announcement or a reconnect can drop a verdict in these tests.
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  { env: { SALE_VERDICT_TTL_MS: '60000' } },
);

/** How long the gateway may take to act on what it was told in the background (holders read, a sale event). */
// Half the verdict TTL: a wait for the background, on a busy machine too, that the TTL cannot end instead.
const BACKGROUND = { timeout: 30_000, interval: 10 };

async function purchase(url: string, saleId: number, buyer = `buyer-${randomUUID()}`): Promise<Response> {
  return fetch(`${url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });
}

/** Sells a one-unit sale out through the gateway, then puts units back in Redis behind its back. */
async function soldOutSaleWithUnitsBackInRedis(server: TestGateway): Promise<number> {
  const { url } = server;
  const sale = await createLiveSale(ctx, { stock: 1 });
  expect((await purchase(url, sale.id)).status).toBe(202);
  await expectProblem(await purchase(url, sale.id), 410, 'SOLD_OUT');
  // The verdict is kept once the sale's holders are read, in the background.
  await expect.poll(() => server.gateway.verdicts.get(sale.id), BACKGROUND).toBeDefined();
  // What a reconcile does when reservations Redis lost go back to stock.
  await ctx.redis.hset(saleKeys(ctx.config.REDIS_PREFIX, sale.id).meta, 'remaining', '3');
  return sale.id;
}

describe('the sold-out fast path', () => {
  it('answers a sold-out sale without calling Redis: units put back silently are not seen', async () => {
    const saleId = await soldOutSaleWithUnitsBackInRedis(gateway);

    await expectProblem(await purchase(gateway.url, saleId), 410, 'SOLD_OUT');
    expect(gateway.gateway.verdicts.get(saleId)?.verdict).toBe('SOLD_OUT');
  });

  it('answers the buyer who took the last unit, retrying, with their reservation: 409 ALREADY_PURCHASED, not SOLD_OUT', async () => {
    const sale = await createLiveSale(ctx, { stock: 1 });
    const won = await purchase(gateway.url, sale.id, 'last-unit-buyer');
    expect(won.status).toBe(202);
    const { reservationId } = (await won.json()) as { reservationId: string };
    await expectProblem(await purchase(gateway.url, sale.id), 410, 'SOLD_OUT');
    await expect.poll(() => gateway.gateway.verdicts.get(sale.id), BACKGROUND).toBeDefined();

    await expectProblem(await purchase(gateway.url, sale.id, 'last-unit-buyer'), 409, 'ALREADY_PURCHASED', undefined, { reservationId });
    await expectProblem(await purchase(gateway.url, sale.id), 410, 'SOLD_OUT');
    expect(gateway.gateway.verdicts.get(sale.id)?.holders.get('last-unit-buyer')).toBe(reservationId);
  });

  it('answers a holder of an ended sale with their reservation too', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    const won = await purchase(gateway.url, sale.id, 'early-buyer');
    const { reservationId } = (await won.json()) as { reservationId: string };
    const closed = { version: 1, stock: 5, endsAt: (await redisNow(ctx.redis)) - 1, operatorPaused: false };
    expect(await ctx.store.sale(sale.id).applyControls(closed)).toBe('applied');
    await expectProblem(await purchase(gateway.url, sale.id), 410, 'SALE_ENDED');
    await expect.poll(() => gateway.gateway.verdicts.get(sale.id), BACKGROUND).toBeDefined();

    await expectProblem(await purchase(gateway.url, sale.id, 'early-buyer'), 409, 'ALREADY_PURCHASED', undefined, { reservationId });
  });

  it('sells again as soon as the reconciler announces the sale changed', async () => {
    const saleId = await soldOutSaleWithUnitsBackInRedis(gateway);

    await ctx.store.sale(saleId).announceChanged();
    await expect.poll(() => gateway.gateway.verdicts.get(saleId), BACKGROUND).toBeUndefined();

    expect((await purchase(gateway.url, saleId)).status).toBe(202);
  });

  it('drops every verdict when its subscription reconnects, since announcements may have been missed, and caches again once resubscribed', async () => {
    const saleId = await soldOutSaleWithUnitsBackInRedis(gateway);
    const clients = (await ctx.redis.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
    const subscriber = clients.split('\n').find((line) => line.includes(` name=gateway-sale-events:${ctx.config.REDIS_PREFIX} `));
    expect(subscriber).toBeDefined();

    await ctx.redis.call('CLIENT', 'KILL', 'ID', /\bid=(\d+)/.exec(subscriber!)![1]!);
    await expect.poll(() => gateway.gateway.verdicts.get(saleId), BACKGROUND).toBeUndefined();

    expect((await purchase(gateway.url, saleId)).status).toBe(202);
    await expect.poll(() => gateway.gateway.verdicts.isListening, BACKGROUND).toBe(true);
  });

  it('trusts a verdict no longer than its TTL, should an announcement be lost anyway', async () => {
    const clock = manualClock();
    const shortLived = await startGateway({ ...ctx, config: { ...ctx.config, SALE_VERDICT_TTL_MS: 300 } }, { now: clock.now });
    try {
      const saleId = await soldOutSaleWithUnitsBackInRedis(shortLived);
      clock.advance(299);
      await expectProblem(await purchase(shortLived.url, saleId), 410, 'SOLD_OUT');

      clock.advance(1);

      expect((await purchase(shortLived.url, saleId)).status).toBe(202);
    } finally {
      await shortLived.close();
    }
  });

  it('answers an ended sale without calling Redis', async () => {
    const sale = await createLiveSale(ctx, { startsIn: -120_000, endsIn: -60_000 });
    await expectProblem(await purchase(gateway.url, sale.id), 410, 'SALE_ENDED');
    await expect.poll(() => gateway.gateway.verdicts.get(sale.id), BACKGROUND).toBeDefined();
    const reopened = { version: 1, stock: 10, endsAt: (await redisNow(ctx.redis)) + 3_600_000, operatorPaused: false };
    expect(await ctx.store.sale(sale.id).applyControls(reopened)).toBe('applied');

    await expectProblem(await purchase(gateway.url, sale.id), 410, 'SALE_ENDED');
  });
});

describe('a live sale that Redis lost', () => {
  it('is answered 503 SALE_PAUSED with Retry-After while the reconciler rebuilds it', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    await gateway.gateway.liveSales.refresh();
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await ctx.redis.del(keys.meta, keys.buyers, keys.stream);

    const res = await purchase(gateway.url, sale.id);

    expect(res.headers.get('retry-after')).toBe('2');
    await expectProblem(res, 503, 'SALE_PAUSED', 'The sale is paused, retry shortly');
    expect(await ctx.redis.exists(keys.meta, keys.buyers, keys.stream)).toBe(0);
  });

  it('still answers an id MySQL does not know with 404 SALE_NOT_FOUND', async () => {
    await gateway.gateway.liveSales.refresh();

    await expectProblem(await purchase(gateway.url, 2_147_483_000), 404, 'SALE_NOT_FOUND');
  });

  it('answers a sale MySQL holds as ended, and Redis lost, with 404 SALE_NOT_FOUND', async () => {
    const now = await redisNow(ctx.redis);
    const sale = await createOrderStore(ctx.prisma).insertSale({
      name: 'Over',
      stock: 3,
      perUserLimit: 1,
      startsAt: new Date(now - 120_000),
      endsAt: new Date(now - 60_000),
    });
    await gateway.gateway.liveSales.refresh();

    await expectProblem(await purchase(gateway.url, sale.id), 404, 'SALE_NOT_FOUND');
  });
});
