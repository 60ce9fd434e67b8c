import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId, planControl } from '@flashsale/domain';
import { createOrderStore } from '@flashsale/order-store';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { reconcileSale, runSaleControl, salesDeps } from '@flashsale/sales/testing';
import { watchOnce } from '../support/watch-once.ts';
import { contextPerFile, createIsolatedContext, createLiveSale, redisNow, type TestContext } from '../support/context.ts';
import { reconcileDeps } from '../support/reconciler.ts';
import { until } from '../support/until.ts';

// The operator's pause and the reconciler's are two flags; neither lifts the other, and a rebuild from
// MySQL keeps the operator's controls. Real Redis and MariaDB, the real reconcile and watch code.

const env = contextPerFile();
const logger = createLogger('controls-test', 'silent');
const controls = (ctx: TestContext) => salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger });
const buy = (ctx: TestContext, saleId: number) =>
  ctx.store.reserve({
    saleId,
    userId: `buyer-${randomUUID()}`,
    quantity: 1,
    reservationId: newReservationId(saleId),
  });

function watcherDeps(own: TestContext) {
  return {
    ...salesDeps({ saleStore: own.store, prisma: own.prisma, logger }),
    publishGraceMs: 0,
    createGraceMs: 60_000,
    retentionMs: 60_000,
    watchAfterEndMs: own.config.RECONCILER_WATCH_AFTER_END_MS,
    retireAfterEndMs: own.config.RECONCILER_RETIRE_AFTER_END_MS,
  };
}

describe("the operator's controls and the reconciler", () => {
  it("an operator's resume during a reconciliation does not cut its drain short", async () => {
    const { ctx } = env;
    const sale = await createLiveSale(ctx, { stock: 5 });
    expect(await buy(ctx, sale.id)).toMatchObject({ kind: 'reserved' });
    await runSaleControl(controls(ctx), sale.id, { action: 'pause' }, 'api');
    // A consumer that died holding the entry: the reconciliation waits for the drain until it settles.
    const { stream } = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'ghost', 'COUNT', 10, 'STREAMS', stream, '>');
    let finished = false;
    const reconciling = reconcileSale(reconcileDeps(ctx, 20_000), sale.id, 'operator').finally(() => (finished = true));
    await until(
      () => ctx.store.sale(sale.id).state(),
      (state) => state?.paused === true,
    );

    const resumed = await runSaleControl(controls(ctx), sale.id, { action: 'resume' }, 'api');

    expect(resumed).toMatchObject({ status: 'paused', reconciling: true, pausedByOperatorAt: null });
    await sleep(500);
    expect(finished).toBe(false);
    expect(await buy(ctx, sale.id)).toEqual({ kind: 'sale_paused' });
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, (await ctx.redis.xrange(stream, '-', '+'))[0]![0]);
    await reconciling;
    expect(await buy(ctx, sale.id)).toMatchObject({ kind: 'reserved' });
  });

  it("a reconciliation keeps the operator's pause: the sale stays refused until the operator resumes it", async () => {
    const { ctx } = env;
    const sale = await createLiveSale(ctx, { stock: 5 });
    await runSaleControl(controls(ctx), sale.id, { action: 'pause' }, 'api');

    await reconcileSale(reconcileDeps(ctx), sale.id, 'operator');

    expect(await ctx.store.sale(sale.id).state()).toMatchObject({
      paused: false,
      operatorPaused: true,
      controlsVersion: 1,
    });
    expect(await buy(ctx, sale.id)).toEqual({ kind: 'sale_paused' });
    await runSaleControl(controls(ctx), sale.id, { action: 'resume' }, 'api');
    expect(await buy(ctx, sale.id)).toMatchObject({ kind: 'reserved', remaining: 4 });
  });

  it('a rebuild after Redis lost the sale restores what the operator set: pause, added stock, end', async () => {
    const { ctx } = env;
    const sale = await createLiveSale(ctx, { stock: 10, endsIn: 3_600_000 });
    expect(await buy(ctx, sale.id)).toMatchObject({ kind: 'reserved' });
    await runSaleControl(controls(ctx), sale.id, { action: 'add_stock', units: 5 }, 'api');
    const paused = await runSaleControl(controls(ctx), sale.id, { action: 'pause' }, 'api');
    await ctx.redis.del(...Object.values(saleKeys(ctx.config.REDIS_PREFIX, sale.id)));

    await reconcileSale(reconcileDeps(ctx), sale.id, 'lost');

    // The reservation was not an order yet: lost with Redis, as any; the units come back to remaining.
    expect(await ctx.store.sale(sale.id).state()).toMatchObject({
      stock: 15,
      remaining: 15,
      endsAt: new Date(paused.endsAt).getTime(),
      paused: false,
      operatorPaused: true,
      controlsVersion: 2,
    });
  });

  it("the watch brings Redis level with a control MySQL committed and Redis never received (the process died between), and takes an operator's pause for no stuck reconciliation", async () => {
    // The watcher looks at every sale of its database: this one sees only its own.
    const own = await createIsolatedContext();
    try {
      const sale = await createLiveSale(own, { stock: 5 });
      const now = await redisNow(own.redis);
      await createOrderStore(own.prisma)
        .sale(sale.id)
        .control(now, (state) => planControl(state, { action: 'pause' }, now));
      await createOrderStore(own.prisma)
        .sale(sale.id)
        .control(now, (state) => planControl(state, { action: 'add_stock', units: 2 }, now));
      expect(await buy(own, sale.id)).toMatchObject({ kind: 'reserved', remaining: 4 });

      const requested: number[] = [];
      const watch = { ...watcherDeps(own), requestReconcile: async (saleId: number) => void requested.push(saleId) };

      await watchOnce(watch);

      expect(await own.store.sale(sale.id).state()).toMatchObject({
        stock: 7,
        remaining: 6,
        operatorPaused: true,
        controlsVersion: 2,
      });
      expect(await buy(own, sale.id)).toEqual({ kind: 'sale_paused' });
      // Paused by an operator at two looks running is not a reconciliation that died: nothing is queued.
      await watchOnce(watch);
      expect(requested).toEqual([]);
    } finally {
      await own.close();
    }
  });
});
