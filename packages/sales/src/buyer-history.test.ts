import { describe, expect, it } from 'vitest';
import { redisNow, saleKeys } from '@flashsale/redis-store';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { orderRow } from '../../../test/support/orders.ts';
import { restoreBuyerHistory } from './buyer-history.ts';
import { createLogger } from '@flashsale/runtime';
import { salesDeps } from './testing.ts';

const env = contextPerFile();

describe('restoreBuyerHistory', () => {
  it("derives every buyer's closed orders from MySQL, page after page, counting only cancelled and expired ones; a repeat changes nothing", async () => {
    const { ctx } = env;
    const sale = await createLiveSale(ctx, { stock: 10 });
    const order = (userId: string, status: 'created' | 'paid' | 'cancelled' | 'expired', closedAgoMs: number) =>
      orderRow(sale.id, userId, status, closedAgoMs);
    // 2,500 buyers with one closed order each: three pages of 1,000. Their ids sort byte-wise, as MySQL pages them.
    const buyers = Array.from({ length: 2500 }, (_, i) => `buyer-${String(i).padStart(4, '0')}`);
    await ctx.prisma.order.createMany({ data: buyers.map((buyer) => order(buyer, 'cancelled', 60_000)) });
    await ctx.prisma.order.createMany({
      data: [
        order('buyer-0999', 'expired', 10_000),
        order('buyer-0999', 'cancelled', 20_000),
        order('buyer-1000', 'created', 0),
        order('buyer-1001', 'paid', 0),
        order('never-closed', 'created', 0),
      ],
    });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);

    const before = await redisNow(ctx.redis);
    expect(
      await restoreBuyerHistory(
        salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('test', 'silent') }),
        sale.id,
        sale.rebuyRule,
      ),
    ).toBe(2500);
    const restored = await ctx.redis.hgetall(keys.closed);
    expect(
      await restoreBuyerHistory(
        salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('test', 'silent') }),
        sale.id,
        sale.rebuyRule,
      ),
    ).toBe(2500);

    expect(await ctx.redis.hgetall(keys.closed)).toEqual(restored);
    expect(Object.keys(restored).sort()).toEqual(buyers);
    const last = await ctx.store.sale(sale.id).closedOrders('buyer-0999');
    expect(last!.closedOrders).toBe(3);
    // Its last close 10 s before the restore, on Redis's clock (MySQL's elapsed time; the margin is the test's pace).
    expect(before - last!.lastClosedAt).toBeGreaterThanOrEqual(9_000);
    expect(before - last!.lastClosedAt).toBeLessThan(15_000);
    expect(Object.values(restored).filter((record) => record.startsWith('1|'))).toHaveLength(2499);
  });
});
