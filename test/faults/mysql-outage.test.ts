import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { faultLedgerOf, mergeBursts, ordersOf, purchaseBurst } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

describe('MariaDB unreachable for about 10 s mid-sale', () => {
  it('the gateway keeps accepting, the workers retry, and everything drains after recovery', async () => {
    system = await startSystem({ workers: 2, workerDbProxy: true });
    const { ctx, gateways, dbProxy } = system;
    const saleId = await system.createSale({ stock: 400 });
    const before = await purchaseBurst(
      gateways[0]!.url,
      saleId,
      Array.from({ length: 100 }, (_, i) => `before-${i}`),
    );
    await ctx.store.sale(saleId).waitForDrain();

    dbProxy!.cut();
    const outageStarted = Date.now();
    const during = await purchaseBurst(
      gateways[0]!.url,
      saleId,
      Array.from({ length: 200 }, (_, i) => `during-${i}`),
    );
    // Purchases never wait on MySQL: all answered, none failed.
    expect(during.accepted.size).toBe(200);
    expect(during.failed.size + during.unknown.size).toBe(0);
    expect((await ordersOf(ctx.prisma, saleId)).length).toBe(100);
    await sleep(Math.max(0, 10_000 - (Date.now() - outageStarted)));
    dbProxy!.restore();

    await ctx.store.sale(saleId).waitForDrain(60_000);
    const all = mergeBursts(before, during);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, all.accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 300, remaining: 100 });
    expect(system.workers.flatMap((w) => w.logs).filter((l) => l.msg === 'entry moved to the dead-letter stream')).toEqual([]);
  });
});
