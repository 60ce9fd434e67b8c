import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { insertSale } from './sale-repository.ts';
import { writeOrderBatch } from './order-writer.ts';
import { cancelOrder } from './order-lifecycle.ts';
import { liveBuyerPages } from './sale-ledger.ts';

// The rebuild's read of a sale's buyers from MySQL: page by page on (sale_id, live_user_id).

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(() => ctx.close());

describe('liveBuyerPages', () => {
  it('reads every buyer of a live order once, in pages of the size asked, leaving out closed orders and other sales', async () => {
    const [sale, other] = await Promise.all(
      [0, 1].map(() =>
        insertSale(ctx.prisma, {
          name: 'Live buyers test',
          stock: 100,
          perUserLimit: 3,
          startsAt: new Date(Date.now() - 60_000),
          endsAt: new Date(Date.now() + 3_600_000),
        }),
      ),
    );
    const reservedAt = Date.UTC(2026, 10, 26, 1, 0, 0, 123);
    const orders = Array.from({ length: 10 }, (_, i) => ({
      reservationId: `${sale!.id}-${randomUUID()}`,
      saleId: sale!.id,
      userId: `buyer-${i}`,
      quantity: (i % 3) + 1,
      reservedAt,
      generation: sale!.generation,
    }));
    expect((await writeOrderBatch(ctx.prisma, sale!.id, orders)).written).toHaveLength(10);
    expect(
      (
        await writeOrderBatch(ctx.prisma, other!.id, [
          { ...orders[0]!, reservationId: `${other!.id}-${randomUUID()}`, saleId: other!.id, generation: other!.generation },
        ])
      ).written,
    ).toHaveLength(1);
    expect((await cancelOrder(ctx.prisma, orders[4]!.reservationId, orders[4]!.userId))?.kind).toBe('cancelled');

    const pages = [];
    for await (const page of liveBuyerPages(ctx.prisma, sale!.id, 3)) pages.push(page);

    expect(pages.map((page) => page.length)).toEqual([3, 3, 3]);
    const expected = orders
      .filter((_, i) => i !== 4)
      .map(({ userId, reservationId, quantity }) => ({ userId, reservationId, quantity, reservedAt }));
    expect(pages.flat().sort((a, b) => a.userId.localeCompare(b.userId))).toEqual(
      expected.sort((a, b) => a.userId.localeCompare(b.userId)),
    );
  });
});
