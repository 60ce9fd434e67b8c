import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../support/context.ts';
import {
  createHttpClient,
  type HttpResult,
  ledgerOf,
  spawnGateway,
  spawnWorker,
  type AppProcess,
  signBuyerTokens,
} from '@flashsale/harness';

// The whole pipeline with real processes: one gateway, two workers, the real Redis and MariaDB.
// 1,000 buyers each send 4 purchase requests at once (quantity 1 or 2, per-user limit 2) for 500 units.

const BUYERS = 1000;
const ATTEMPTS = 4;
const STOCK = 500;

let ctx: TestContext;
let gateway: AppProcess & { url: string };
let workers: AppProcess[];

beforeAll(async () => {
  ctx = createTestContext();
  const env = { REDIS_PREFIX: ctx.config.REDIS_PREFIX, DATABASE_URL: ctx.config.DATABASE_URL, REDIS_URL: ctx.config.REDIS_URL };
  [gateway, ...workers] = await Promise.all([spawnGateway(env), spawnWorker(env), spawnWorker(env)]);
});
afterAll(async () => {
  await Promise.all([gateway, ...workers].map((p) => p?.kill('SIGTERM')));
  await ctx.close();
});

describe('flash crowd, end to end', () => {
  it('sells exactly the stock, one order per buyer, every 202 an order and no order without one', async () => {
    const admin = createHttpClient(gateway.url, 4);
    const created = await admin.send('POST', '/api/admin/sales', {
      headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` },
      body: {
        name: 'Flash crowd',
        stock: STOCK,
        perUserLimit: 2,
        startsAt: new Date(Date.now() - 60_000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    const saleId = created.body.id as number;
    admin.close();

    const tokens = signBuyerTokens(Array.from({ length: BUYERS }, (_, i) => `buyer-${i}`));
    const requests = tokens.flatMap((token, buyer) =>
      Array.from({ length: ATTEMPTS }, (_, attempt) => ({ buyer, token, quantity: ((buyer + attempt) % 2) + 1 })),
    );
    // Interleave buyers' attempts so that each buyer's requests really race each other.
    requests.sort((a, b) => ((a.buyer * 7919 + a.quantity) % 4001) - ((b.buyer * 7919 + b.quantity) % 4001));
    const client = createHttpClient(gateway.url, 128);
    const results: (HttpResult & { buyer: number; quantity: number })[] = await Promise.all(
      requests.map(async (r) => ({
        ...(await client.send('POST', `/api/sales/${saleId}/purchase`, {
          headers: { authorization: `Bearer ${r.token}` },
          body: { quantity: r.quantity },
        })),
        buyer: r.buyer,
        quantity: r.quantity,
      })),
    );
    client.close();
    expect(results).toHaveLength(BUYERS * ATTEMPTS);

    const accepted = new Map<string, { userId: string; quantity: number }>();
    const acceptedByBuyer = new Map<number, string>();
    const refusals: Record<string, number> = {};
    for (const result of results) {
      if (result.status === 202) {
        expect(result.body).toMatchObject({ saleId, quantity: result.quantity, status: 'pending' });
        expect(acceptedByBuyer.has(result.buyer)).toBe(false);
        accepted.set(result.body.reservationId as string, { userId: `buyer-${result.buyer}`, quantity: result.quantity });
        acceptedByBuyer.set(result.buyer, result.body.reservationId as string);
        continue;
      }
      const code = result.body.code as string;
      refusals[code] = (refusals[code] ?? 0) + 1;
      const expectedStatus = { ALREADY_PURCHASED: 409, INSUFFICIENT_STOCK: 409, SOLD_OUT: 410 }[code];
      expect(result.status, `unexpected refusal ${result.status} ${code}`).toBe(expectedStatus);
      if (code === 'INSUFFICIENT_STOCK') expect(result.quantity).toBe(2);
    }
    // An ALREADY_PURCHASED answer names the reservation the buyer actually got.
    for (const result of results.filter((r) => r.body.code === 'ALREADY_PURCHASED')) {
      expect(result.body.reservationId).toBe(acceptedByBuyer.get(result.buyer));
    }
    expect(refusals.ALREADY_PURCHASED).toBeGreaterThan(0);
    expect(refusals.SOLD_OUT).toBeGreaterThan(0);

    await ctx.store.sale(saleId).waitForDrain(60_000);
    const ledger = await ledgerOf(ctx.store, ctx.prisma, saleId, accepted);
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
    });
    expect(ledger.unitsInDb + ledger.remaining).toBe(STOCK);
    expect(ledger.unitsInDb).toBeLessThanOrEqual(STOCK);
    const acceptedUnits = [...accepted.values()].reduce((sum, a) => sum + a.quantity, 0);
    expect(ledger.unitsInDb).toBe(acceptedUnits);

    const stats = await createHttpClient(gateway.url, 1).send('GET', `/api/admin/sales/${saleId}/stats`, {
      headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` },
    });
    expect(stats.body).toEqual({
      saleId,
      stock: STOCK,
      remaining: ledger.remaining,
      inFlight: 0,
      ordersInDb: accepted.size,
      unitsInDb: acceptedUnits,
      ordersByStatus: {
        created: { orders: accepted.size, units: acceptedUnits },
        paid: { orders: 0, units: 0 },
        cancelled: { orders: 0, units: 0 },
        expired: { orders: 0, units: 0 },
      },
      unitsReturned: 0,
      unitsAwaitingReturn: 0,
      refundsDue: { count: 0, amountCents: 0 },
      deadLettered: 0,
      consistent: true,
      lost: { reservations: 0, units: 0 },
      audit: null,
    });
  });
});
