import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { manualClock } from '../../../../test/support/clock.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { writeOrdersOf } from '../../../../test/support/orders.ts';

// What a repeated cancel costs: an order already closed is answered from one read, never queued on the
// sale's row lock; and cancels spend the buyer's purchase budget (RATE_LIMIT_PER_SECOND, 3 here).
const clock = manualClock();
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  { env: { RATE_LIMIT_PER_SECOND: '3' }, now: clock.now },
);

const purchase = (saleId: number, buyer: string) =>
  fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });
const cancel = (reservationId: string, buyer: string) =>
  fetch(`${gateway.url}/api/reservations/${reservationId}/cancel`, { method: 'POST', headers: bearer(buyerToken(buyer)) });

/** A new buyer's order on a new sale, written as a worker writes it; the clock then opens a fresh second. */
async function orderOf() {
  const sale = await createLiveSale(ctx, { stock: 5 });
  const buyer = `buyer-${randomUUID()}`;
  const res = await purchase(sale.id, buyer);
  expect(res.status).toBe(202);
  const { reservationId } = (await res.json()) as { reservationId: string };
  expect(await writeOrdersOf(ctx, sale.id)).toBe(1);
  clock.nextSecond();
  return { sale, buyer, reservationId };
}

/** Holds the sale's row lock (as a payment, an expiry or another cancel would) until `release` is called. */
function holdSaleLock(saleId: number): { held: Promise<void>; release: () => void; done: Promise<unknown> } {
  let release!: () => void;
  let held!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const heldPromise = new Promise<void>((resolve) => (held = resolve));
  const done = ctx.prisma.$transaction(
    async (tx) => {
      await tx.$queryRaw`SELECT id FROM sales WHERE id = ${saleId} FOR UPDATE`;
      held();
      await released;
    },
    { timeout: 30_000 },
  );
  return { held: heldPromise, release, done };
}

describe('a repeated cancel', () => {
  it('of a cancelled order answers cancelled while the sale row is locked, without waiting for the lock', async () => {
    const { sale, buyer, reservationId } = await orderOf();
    expect((await cancel(reservationId, buyer)).status).toBe(200);
    clock.nextSecond();

    const lock = holdSaleLock(sale.id);
    await lock.held;
    try {
      const again = await cancel(reservationId, buyer);
      expect({ status: again.status, body: await again.json() }).toEqual({ status: 200, body: { reservationId, status: 'cancelled' } });
    } finally {
      lock.release();
      await lock.done;
    }
  });

  it('of a paid order answers 409 ORDER_NOT_CANCELLABLE while the sale row is locked', async () => {
    const { sale, buyer, reservationId } = await orderOf();
    await ctx.prisma.order.update({ where: { reservationId }, data: { status: 'paid' } });

    const lock = holdSaleLock(sale.id);
    await lock.held;
    try {
      await expectProblem(await cancel(reservationId, buyer), 409, 'ORDER_NOT_CANCELLABLE', 'the order is paid', { orderStatus: 'paid' });
    } finally {
      lock.release();
      await lock.done;
    }
  });
});

describe('cancels and purchases', () => {
  it("share the buyer's purchase budget: a cancel-and-rebuy loop spends one budget", async () => {
    const { sale, buyer, reservationId } = await orderOf();

    expect((await cancel(reservationId, buyer)).status).toBe(200);
    expect((await cancel(reservationId, buyer)).status).toBe(200);
    expect((await purchase(sale.id, buyer)).status).toBe(202);
    await expectProblem(await cancel(reservationId, buyer), 429, 'RATE_LIMITED');
    await expectProblem(await purchase(sale.id, buyer), 429, 'RATE_LIMITED');
  });
});
