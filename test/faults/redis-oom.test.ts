import { afterEach, describe, expect, it } from 'vitest';
import { ledgerOf, purchaseBurst } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';

// Redis out of memory (maxmemory reached, noeviction) in the middle of a sale: buyers get fast 503s,
// and the system heals by itself: the reconciler's retention frees the acknowledged stream entries
// (XTRIM, which Redis allows under OOM), and purchases resume without anyone raising maxmemory. Meanwhile
// no process spins: the reconciler's BullMQ workers and loops back off, with one log line per interval.

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const usedMemory = async (system: System) => Number(/used_memory:(\d+)/.exec(await system.ctx.redis.info('memory'))![1]);

describe('Redis out of memory mid-sale', () => {
  it('answers 503 while full, frees memory by retention, and sells again without a person; nothing spins', async () => {
    // Retention by age (8 s, so Redis stays full across several of the reconciler's rounds) is what frees memory here: the streams stay under the entry bound.
    system = await startSystem({ workers: 1, env: { RECONCILER_STREAM_RETENTION_MS: '8000', AUDIT_EVERY_MS: '1000' } });
    const { ctx } = system;
    const saleId = await system.createSale({ stock: 1_000_000 });
    const url = system.gateways[0]!.url;
    const accepted = new Map<string, { userId: string; quantity: number }>();
    // Room for a few thousand reservations above what the system holds now.
    await ctx.redis.config('SET', 'maxmemory', String((await usedMemory(system)) + 1_500_000));

    let round = 0;
    const burst = async (n: number) => {
      const outcome = await purchaseBurst(
        url,
        saleId,
        Array.from({ length: n }, (_, i) => `oom-${round}-${i}`),
        { connections: 16 },
      );
      round += 1;
      for (const [id, a] of outcome.accepted) accepted.set(id, a);
      return outcome;
    };
    // Fill until Redis refuses nearly every purchase: the gateway answers 503 SERVICE_UNAVAILABLE, fast.
    let full = false;
    for (let i = 0; i < 60 && !full; i++) {
      const outcome = await burst(500);
      full = outcome.failed.size >= 400;
    }
    expect(full).toBe(true);
    // Those 503s were Redis refusing writes for memory: the server counts each OOM error it answered. (A
    // write tried now could already pass: retention frees entries older than 8 s, which a slow fill has.)
    const oomErrors = Number(/errorstat_OOM:count=(\d+)/.exec(await ctx.redis.info('errorstats'))?.[1] ?? 0);
    expect(oomErrors).toBeGreaterThanOrEqual(400);
    const fullAt = Date.now();
    const reconcilerLinesAtFull = system.reconciler!.logs.length;
    const workerLinesAtFull = system.workers[0]!.logs.length;

    // Nobody touches maxmemory: a few buyers a second until one is accepted again.
    let resumed = false;
    while (!resumed && Date.now() - fullAt < 60_000) {
      const outcome = await burst(20);
      resumed = outcome.accepted.size > 0;
      if (!resumed) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const healedInMs = Date.now() - fullAt;
    expect(resumed).toBe(true);
    const reconcilerLines = system.reconciler!.logs.length - reconcilerLinesAtFull;
    const workerLines = system.workers[0]!.logs.length - workerLinesAtFull;
    console.log(
      `OOM at ${accepted.size} reservations (${oomErrors} writes refused OOM); purchases resumed ${healedInMs} ms later; log lines meanwhile: reconciler ${reconcilerLines}, worker ${workerLines}`,
    );
    // No spin: a handful of lines a second at most (one summary per interval, the passes' own lines).
    expect(reconcilerLines).toBeLessThan(20 + (healedInMs / 1000) * 5);
    expect(workerLines).toBeLessThan(20 + (healedInMs / 1000) * 5);

    // Every 202 an order, the ledger exact.
    await ctx.store.sale(saleId).waitForDrain(60_000);
    const ledger = await ledgerOf(ctx.store, ctx.prisma, saleId, accepted);
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
    });
  });
});
