import { afterEach, describe, expect, it, vi } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHttpClient, faultLedgerOf, mergeBursts, purchaseBurst } from '@flashsale/harness';
import { createOrderStore } from '@flashsale/order-store';
import { startSystem, type System } from '../support/system.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

describe('a reconciliation requested while reservations are in flight', () => {
  it('waits for them before rebuilding: rebuilding earlier would have oversold, and nothing was', async () => {
    // The watcher is kept off these two young sales: the control's naive rebuild below pauses it for a
    // moment, which a watching reconciler would (rightly) take up.
    system = await startSystem({ workers: 0, env: { RECONCILER_PUBLISH_GRACE_MS: '3600000' } });
    const { ctx, gateways } = system;
    const saleId = await system.createSale({ stock: 100 });
    const control = await system.createSale({ stock: 100 });

    // Both sales sell out while no worker runs: all 100 units are in flight, none in MySQL yet.
    const sold = await purchaseBurst(
      gateways[0]!.url,
      saleId,
      Array.from({ length: 150 }, (_, i) => `buyer-${i}`),
    );
    expect(sold.accepted.size).toBe(100);
    expect(await ctx.store.sale(saleId).backlog()).toMatchObject({ lag: 100, pending: 0 });
    expect(
      (
        await purchaseBurst(
          gateways[0]!.url,
          control,
          Array.from({ length: 100 }, (_, i) => `c-${i}`),
        )
      ).accepted.size,
    ).toBe(100);

    // The control: rebuild it the naive way, without waiting for the drain. MySQL knows none of the 100
    // reservations, so the rebuilt state hands all 100 units out again: 200 buyers told yes for 100 units.
    const naive = await createOrderStore(ctx.prisma)
      .sale(control)
      .lockForRebuild((locked) => locked.switchGeneration({ lost: false }));
    await ctx.store.rebuild(naive!.sale, {
      ...naive!,
      buyers: createOrderStore(ctx.prisma).sale(control).liveBuyerPages(),
    });
    await ctx.store.sale(control).setPaused(false);
    await ctx.store.sale(control).announceChanged();
    // Until the gateway hears the announcement it answers from its cached "sold out" (410, nothing
    // written); the first buyer is asked again until the gateway sells, then the other 99 come.
    const firstAgain = await vi.waitFor(
      async () => {
        const burst = await purchaseBurst(gateways[0]!.url, control, ['c2-0']);
        expect(burst.accepted.size).toBe(1);
        return burst;
      },
      { timeout: 60_000, interval: 20 },
    );
    const oversold = mergeBursts(
      firstAgain,
      await purchaseBurst(
        gateways[0]!.url,
        control,
        Array.from({ length: 99 }, (_, i) => `c2-${i + 1}`),
      ),
    );
    expect({ remainingAfterNaiveRebuild: naive!.remaining, acceptedAgain: oversold.accepted.size }).toEqual({
      remainingAfterNaiveRebuild: 100,
      acceptedAgain: 100,
    });

    const admin = createHttpClient(gateways[0]!.url, 2);
    const reconciling = admin.send('POST', `/api/admin/sales/${saleId}/reconcile`, {
      headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` },
    });
    // Paused, and still waiting: the reservations are not in MySQL, so it must not rebuild.
    await expect.poll(async () => (await ctx.store.sale(saleId).state())?.paused, { timeout: 60_000 }).toBe(true);
    await sleep(1500);
    expect(await ctx.store.sale(saleId).state()).toMatchObject({ paused: true, remaining: 0 });
    const whilePaused = await purchaseBurst(gateways[0]!.url, saleId, ['late-1']);
    expect(whilePaused.refused).toEqual({ SALE_PAUSED: 1 });

    await system.addWorker();
    const done = await reconciling;
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ saleId, remaining: 0, buyers: 100 });
    expect(Number(done.body.tookMs)).toBeGreaterThanOrEqual(1500);
    admin.close();

    const after = await purchaseBurst(
      gateways[0]!.url,
      saleId,
      Array.from({ length: 50 }, (_, i) => `after-${i}`),
    );
    expect(after.accepted.size).toBe(0);
    expect(after.refused).toEqual({ SOLD_OUT: 50 });
    await ctx.store.sale(saleId).waitForDrain();
    const all = mergeBursts(sold, after);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, all.accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 100, remaining: 0 });
  });
});
