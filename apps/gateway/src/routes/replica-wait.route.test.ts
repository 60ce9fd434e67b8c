import { describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { parseBuyerRecord } from '@flashsale/redis-store/testing';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

// REDIS_WAIT_REPLICAS against a Redis with no replica (the machine's): no reservation can be acknowledged
// by a replica, so none is answered 202; each stands on the primary, and the buyer's retry learns it.
// test/faults/redis-sentinel.test.ts shows the same setting keeping every 202 through a real failover.
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  { env: { REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '20' } },
);

const buy = (saleId: number, buyer: string) =>
  fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });

describe('purchases with REDIS_WAIT_REPLICAS=1 and no replica to acknowledge them', () => {
  it('answers 503 with Retry-After, keeps the reservation on the primary, and answers the retry 409 ALREADY_PURCHASED with it', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });

    const first = await buy(sale.id, 'ann');
    expect(first.headers.get('retry-after')).toBe('1');
    await expectProblem(first, 503, 'SERVICE_UNAVAILABLE', 'the reservation is not yet copied to a replica; retry to learn its outcome');

    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const held = await ctx.redis.hgetall(keys.buyers);
    expect(Object.keys(held)).toEqual(['ann']);
    expect(await ctx.redis.xlen(keys.stream)).toBe(1);

    const retry = await buy(sale.id, 'ann');
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ code: 'ALREADY_PURCHASED', reservationId: parseBuyerRecord(held.ann!).reservationId });
  });

  it('answers a refusal as without the setting: it wrote nothing, so there is nothing to wait for', async () => {
    const sale = await createLiveSale(ctx, { stock: 1, perUserLimit: 1 });
    const tooMany = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { ...bearer(buyerToken('bob')), 'content-type': 'application/json' },
      body: JSON.stringify({ quantity: 2 }),
    });
    expect(tooMany.status).toBe(400);
    expect(await ctx.redis.hlen(saleKeys(ctx.config.REDIS_PREFIX, sale.id).buyers)).toBe(0);
  });
});
