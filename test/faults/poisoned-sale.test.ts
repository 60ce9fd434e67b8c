import { afterEach, describe, expect, it } from 'vitest';
import { faultLedgerOf, ordersOf, purchaseBurst, type AppProcess } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP, salesIndexKey } from '@flashsale/redis-store/testing';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

/** The worker's /metrics, read from the port it logged at start. */
async function workerMetrics(worker: AppProcess): Promise<string> {
  const started = await worker.waitForLog('worker started');
  return (await fetch(`http://127.0.0.1:${String(started.port)}/metrics`)).text();
}

/** The value of the sample of `name` carrying all of `labels` (in whatever order prom-client writes them). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text
    .split('\n')
    .find((l) =>
      wanted.length === 0
        ? l.startsWith(`${name} `)
        : l.startsWith(`${name}{`) && wanted.every((pair) => l.slice(0, l.indexOf('}')).includes(pair)),
    );
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const skippedLines = (worker: AppProcess, saleId: number) =>
  worker.logs.filter((l) => l.msg === 'sale skipped for now: its Redis keys refuse the worker' && l.saleId === saleId);

// The reconciler is left out: how its own passes face a poisoned sale is its concern, tested with it.
// These tests are about the workers: one sale they cannot serve must not stop them serving the others.
describe('a sale whose stream key holds the wrong type', () => {
  it.each([
    ['a string', (key: string, system: System) => system.ctx.redis.set(key, 'written by mistake')],
    ['a hash', (key: string, system: System) => system.ctx.redis.hset(key, 'r', 'written by mistake')],
  ])('(%s) is skipped and counted while the other sales are written in full, and taken up again once repaired', async (_, poison) => {
    system = await startSystem({ workers: 1, reconciler: false });
    const { ctx, gateways } = system;
    const prefix = ctx.config.REDIS_PREFIX;
    const [worker] = system.workers as [AppProcess];
    const broken = await system.createSale({ stock: 10 });
    const healthy = await system.createSale({ stock: 300 });
    // A real sale's stream overwritten, and an index member that is no sale at all, both WRONGTYPE.
    const stray = 2_000_000_000;
    await ctx.redis.del(saleKeys(prefix, broken).stream);
    await poison(saleKeys(prefix, broken).stream, system);
    await ctx.redis.sadd(salesIndexKey(prefix), String(stray));
    await poison(saleKeys(prefix, stray).stream, system);

    const burst = await purchaseBurst(gateways[0]!.url, healthy, buyers('healthy', 300));
    expect(burst.accepted.size).toBe(300);
    await ctx.store.sale(healthy).waitForDrain(60_000);

    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, healthy, burst.accepted, new Set([...burst.unknown, ...burst.failed]));
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 300, remaining: 0 });
    // Counted on each (backed-off) try of each step, logged once per sale and problem.
    const metrics = await until(
      () => workerMetrics(worker),
      (text) =>
        [broken, stray].every(
          (saleId) =>
            (sample(text, 'flashsale_worker_sale_errors_total', { sale_id: String(saleId), stage: 'read', kind: 'wrong_type' }) ?? 0) >= 1,
        ),
    );
    expect(sample(metrics, 'flashsale_worker_sales_backed_off')).toBe(2);
    for (const saleId of [broken, stray]) expect(skippedLines(worker, saleId).map((l) => l.kind)).toEqual(['wrong_type']);

    // The operator repairs the broken sale's stream as publishing made it: the worker takes it up again.
    await ctx.redis.del(saleKeys(prefix, broken).stream);
    await ctx.redis.xgroup('CREATE', saleKeys(prefix, broken).stream, ORDER_WRITERS_GROUP, '0', 'MKSTREAM');
    const after = await purchaseBurst(gateways[0]!.url, broken, buyers('after-repair', 5));
    expect(after.accepted.size).toBe(5);
    await ctx.store.sale(broken).waitForDrain(60_000);
    expect((await ordersOf(ctx.prisma, broken)).map((o) => o.reservationId).sort()).toEqual([...after.accepted.keys()].sort());
    await worker.waitForLog({
      matches: (l) => l.msg === 'sale taken up again' && l.saleId === broken,
      what: `"sale taken up again" for sale ${broken}`,
    });
  });
});

describe('a sale whose dead-letter key holds the wrong type', () => {
  it('keeps its refused entry pending (never acknowledged unrecorded) while every valid entry of every sale is written; dead-letters it once repaired', async () => {
    system = await startSystem({ workers: 1, reconciler: false });
    const { ctx, gateways } = system;
    const prefix = ctx.config.REDIS_PREFIX;
    const [worker] = system.workers as [AppProcess];
    const broken = await system.createSale({ stock: 50 });
    const healthy = await system.createSale({ stock: 300 });
    const keys = saleKeys(prefix, broken);
    await ctx.redis.set(keys.deadLetter, 'written by mistake');
    // An entry that can only be set aside, in the middle of the broken sale's valid ones.
    const first = await purchaseBurst(gateways[0]!.url, broken, buyers('broken-a', 10));
    await ctx.redis.xadd(keys.stream, '*', 'r', 'not-a-reservation');
    const second = await purchaseBurst(gateways[0]!.url, broken, buyers('broken-b', 10));
    const burst = await purchaseBurst(gateways[0]!.url, healthy, buyers('healthy', 300));
    expect([first.accepted.size, second.accepted.size, burst.accepted.size]).toEqual([10, 10, 300]);

    await ctx.store.sale(healthy).waitForDrain(60_000);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, healthy, burst.accepted, new Set([...burst.unknown, ...burst.failed]));
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 300, remaining: 0 });
    // The broken sale's 20 reservations are orders; only the entry to set aside is still pending.
    await until(
      () => ordersOf(ctx.prisma, broken),
      (orders) => orders.length === 20,
    );
    const [pendingCount, pendingId] = (await ctx.redis.xpending(keys.stream, ORDER_WRITERS_GROUP)) as [number, string];
    expect(pendingCount).toBe(1);
    expect(await ctx.redis.xrange(keys.stream, pendingId, pendingId)).toEqual([[pendingId, ['r', 'not-a-reservation']]]);
    const metrics = await workerMetrics(worker);
    expect(
      sample(metrics, 'flashsale_worker_sale_errors_total', { sale_id: String(broken), stage: 'batch', kind: 'wrong_type' }),
    ).toBeGreaterThanOrEqual(1);

    await ctx.redis.del(keys.deadLetter);
    await ctx.store.sale(broken).waitForDrain(60_000);
    const dead = (await ctx.redis.xrange(keys.deadLetter, '-', '+')) as [string, string[]][];
    expect(dead.map(([, fields]) => [fields[fields.indexOf('reason') + 1], fields[fields.indexOf('r') + 1]])).toEqual([
      ['MALFORMED_ENTRY', 'not-a-reservation'],
    ]);
    const all = new Map([...first.accepted, ...second.accepted]);
    const brokenLedger = await faultLedgerOf(ctx.store, ctx.prisma, broken, all, new Set());
    expect({
      lost: brokenLedger.lost,
      duplicated: brokenLedger.duplicated,
      unexpected: brokenLedger.unexpected,
      unitsInDb: brokenLedger.unitsInDb,
      remaining: brokenLedger.remaining,
    }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      unitsInDb: 20,
      remaining: 30,
    });
  });
});
