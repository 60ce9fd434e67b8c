import { afterEach, describe, expect, it } from 'vitest';
import { faultLedgerOf, mergeBursts, purchaseBurst } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

describe('a process killed during a burst', () => {
  it('a worker SIGKILLed mid-batch: the other worker takes over its entries, none lost or doubled', async () => {
    system = await startSystem({ workers: 2, env: { WORKER_BATCH_SIZE: '20' } });
    const { ctx, gateways, workers } = system;
    const saleId = await system.createSale({ stock: 500 });

    let killed: Promise<unknown> | undefined;
    const burst = await purchaseBurst(gateways[0]!.url, saleId, buyers('buyer', 500), {
      onAnswer: (done) => {
        if (done === 200) killed = workers[0]!.kill('SIGKILL');
      },
    });
    expect(await killed).toBe('SIGKILL');
    expect(burst.accepted.size).toBe(500);
    await ctx.store.sale(saleId).waitForDrain(60_000);

    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, burst.accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 500, remaining: 0 });
  });

  it('a gateway SIGKILLed mid-burst: every 202 becomes an order; unanswered requests end as an order or nothing', async () => {
    system = await startSystem({ gateways: 2, workers: 1 });
    const { ctx, gateways } = system;
    const saleId = await system.createSale({ stock: 300 });

    let killed: Promise<unknown> | undefined;
    const first = await purchaseBurst(gateways[0]!.url, saleId, buyers('first', 200), {
      connections: 16,
      onAnswer: (done) => {
        if (done === 80) killed = gateways[0]!.kill('SIGKILL');
      },
    });
    expect(await killed).toBe('SIGKILL');
    expect(first.unknown.size).toBeGreaterThan(0);
    // Buyers whose request went unanswered retry on the surviving gateway, as a client would.
    const retried = await purchaseBurst(gateways[1]!.url, saleId, [...first.unknown]);
    const rest = await purchaseBurst(gateways[1]!.url, saleId, buyers('second', 300));
    await ctx.store.sale(saleId).waitForDrain(60_000);

    const all = mergeBursts(first, retried, rest);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, all.accepted, first.unknown);
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect(ledger.unitsInDb + ledger.remaining).toBe(300);
    expect(ledger.unknownBecameOrders + ledger.unknownBecameNothing).toBe(first.unknown.size);
    // A retry of a request that had landed is refused with the reservation it got.
    expect((retried.refused.ALREADY_PURCHASED ?? 0) + retried.accepted.size + (retried.refused.SOLD_OUT ?? 0)).toBe(first.unknown.size);
    console.log(
      `gateway kill: ${first.unknown.size} unanswered; ${ledger.unknownBecameOrders} became orders, ${ledger.unknownBecameNothing} nothing`,
    );
  });
});
