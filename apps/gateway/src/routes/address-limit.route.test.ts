import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createLiveSale, createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken, signBuyerTokens } from '@flashsale/harness';
import { expectProblem } from '../../../../test/support/http.ts';
import { ordersOfSale, snapshotSale } from '../../../../test/support/sale-snapshot.ts';
import { manualClock, type ManualClock } from '../../../../test/support/clock.ts';

const newBuyer = () => `buyer-${randomUUID()}`;

/**
 * One request from a chosen local address (127.0.0.1 by default; the whole of 127.0.0.0/8 is loopback),
 * on a connection of its own, answered as a fetch Response.
 */
function send(
  url: string,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  localAddress = '127.0.0.1',
): Promise<Response> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode!, headers: responseHeaders }));
      });
    });
    req.once('error', reject);
    req.end();
  });
}

/**
 * A gateway of its own whose per-address budget is 3 a second (per buyer: the default 10), on a clock
 * that stands still until the test moves it: every request between two moves falls in one second.
 */
async function withLimitedGateway(
  env: NodeJS.ProcessEnv,
  test: (ctx: TestContext, gateway: TestGateway, clock: ManualClock) => Promise<void>,
): Promise<void> {
  const ctx = createTestContext({ RATE_LIMIT_PER_ADDRESS_PER_SECOND: '3', ...env });
  const clock = manualClock();
  const gateway = await startGateway(ctx, { now: clock.now });
  try {
    await test(ctx, gateway, clock);
  } finally {
    await gateway.close();
    await ctx.close();
  }
}

/** Tokens of new buyers. */
function newBuyerTokens(count: number): string[] {
  return signBuyerTokens(Array.from({ length: count }, () => newBuyer()));
}

function purchase(
  gateway: TestGateway,
  saleId: number,
  token: string,
  headers: Record<string, string> = {},
  localAddress?: string,
): Promise<Response> {
  return send(gateway.url, 'POST', `/api/sales/${saleId}/purchase`, { authorization: `Bearer ${token}`, ...headers }, localAddress);
}

describe('per-address rate limit on purchases', () => {
  it('refuses the fourth purchase of one address within a second with 429 and Retry-After, changing nothing, while another address is served', async () => {
    await withLimitedGateway({}, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx, { stock: 10 });
      const tokens = newBuyerTokens(5);
      clock.nextSecond();
      const first = [
        await purchase(gateway, sale.id, tokens[0]!),
        await purchase(gateway, sale.id, tokens[1]!),
        await purchase(gateway, sale.id, tokens[2]!),
      ];
      const before = await snapshotSale(ctx, sale.id);

      const fourth = await purchase(gateway, sale.id, tokens[3]!);
      const after = await snapshotSale(ctx, sale.id);
      const fromElsewhere = await purchase(gateway, sale.id, tokens[4]!, {}, '127.0.0.2');

      expect(first.map((res) => res.status)).toEqual([202, 202, 202]);
      expect(fourth.headers.get('retry-after')).toBe('1');
      await expectProblem(fourth, 429, 'RATE_LIMITED', 'Too many requests');
      expect(after).toEqual(before);
      expect(fromElsewhere.status).toBe(202);
      expect(Object.keys((await snapshotSale(ctx, sale.id)).buyers)).toHaveLength(4);
    });
  });

  it('counts refused requests too: a flood of bad tokens from one address uses up its budget', async () => {
    await withLimitedGateway({}, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx);
      const [token] = newBuyerTokens(1);
      clock.nextSecond();
      const statuses = [];
      for (let i = 0; i < 3; i += 1) statuses.push((await purchase(gateway, sale.id, 'not-a-jwt')).status);

      const next = await purchase(gateway, sale.id, token!);

      expect(statuses).toEqual([401, 401, 401]);
      await expectProblem(next, 429, 'RATE_LIMITED', 'Too many requests');
      expect(await ordersOfSale(ctx, sale.id)).toBe(0);
    });
  });

  it('is not dodged with a forged X-Forwarded-For when no proxy is trusted (TRUST_PROXY=0)', async () => {
    await withLimitedGateway({ TRUST_PROXY: '0' }, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx, { stock: 10 });
      const tokens = newBuyerTokens(4);
      clock.nextSecond();
      const statuses = [];
      for (const [i, token] of tokens.entries())
        statuses.push((await purchase(gateway, sale.id, token, { 'x-forwarded-for': `203.0.113.${i + 1}` })).status);

      expect(statuses).toEqual([202, 202, 202, 429]);
      expect(Object.keys((await snapshotSale(ctx, sale.id)).buyers)).toHaveLength(3);
    });
  });

  it('behind one trusted proxy (TRUST_PROXY=1), counts the address the proxy appended: its clients have budgets of their own, and forged entries to the left do not dodge it', async () => {
    await withLimitedGateway({ TRUST_PROXY: '1' }, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx, { stock: 10 });
      const tokens = newBuyerTokens(5);
      clock.nextSecond();
      const statuses = [];
      for (const [i, token] of tokens.slice(0, 4).entries())
        statuses.push((await purchase(gateway, sale.id, token, { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.7` })).status);
      const otherClient = await purchase(gateway, sale.id, tokens[4]!, { 'x-forwarded-for': '203.0.113.8' });

      expect(statuses).toEqual([202, 202, 202, 429]);
      expect(otherClient.status).toBe(202);
    });
  });

  it('is off with RATE_LIMIT_PER_ADDRESS_PER_SECOND=0', async () => {
    await withLimitedGateway({ RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0' }, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx, { stock: 10 });
      const tokens = newBuyerTokens(6);
      clock.nextSecond();
      const statuses = [];
      for (const token of tokens) statuses.push((await purchase(gateway, sale.id, token)).status);

      expect(statuses).toEqual([202, 202, 202, 202, 202, 202]);
    });
  });
});

describe('per-address rate limit on reservation lookups', () => {
  it('refuses the fourth lookup of one address within a second with 429 and Retry-After, while another address is served', async () => {
    await withLimitedGateway({}, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx);
      const buyer = newBuyer();
      const token = buyerToken(buyer);
      const reserved = await send(gateway.url, 'POST', `/api/sales/${sale.id}/purchase`, { authorization: `Bearer ${token}` });
      const { reservationId } = (await reserved.json()) as { reservationId: string };
      // Each lookup by another buyer, so only the address's budget can be what runs out.
      const others = newBuyerTokens(3);
      const lookup = (as: string, localAddress?: string) =>
        send(gateway.url, 'GET', `/api/reservations/${reservationId}`, { authorization: `Bearer ${as}` }, localAddress);
      clock.nextSecond();

      const first = [await lookup(others[0]!), await lookup(others[1]!), await lookup(others[2]!)];
      const fourth = await lookup(token);
      const fromElsewhere = await lookup(token, '127.0.0.2');

      expect(first.map((res) => res.status)).toEqual([404, 404, 404]);
      expect(fourth.headers.get('retry-after')).toBe('1');
      await expectProblem(fourth, 429, 'RATE_LIMITED', 'Too many requests');
      expect(fromElsewhere.status).toBe(200);
      expect(await fromElsewhere.json()).toEqual({
        reservationId,
        saleId: sale.id,
        quantity: 1,
        status: 'pending',
        orderId: null,
        payBy: null,
      });
    });
  });

  it('has a budget of its own: lookups do not use up the budget to buy', async () => {
    await withLimitedGateway({}, async (ctx, gateway, clock) => {
      const sale = await createLiveSale(ctx);
      const tokens = newBuyerTokens(4);
      clock.nextSecond();
      for (const token of tokens.slice(0, 3))
        await send(gateway.url, 'GET', `/api/reservations/${sale.id}-${randomUUID()}`, { authorization: `Bearer ${token}` });

      expect((await purchase(gateway, sale.id, tokens[3]!)).status).toBe(202);
    });
  });
});
