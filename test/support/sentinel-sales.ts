import { expect } from 'vitest';
import { faultLedgerOf, mergeBursts, purchaseBurst, type BurstOutcome } from '@flashsale/harness';
import type { SentinelSystem } from './system.ts';
import { saleStats } from './cluster-sales.ts';
import { until } from './until.ts';
import { convergedOnPrimary } from './converged.ts';

// What the Redis Sentinel fault tests (test/faults/redis-sentinel.test.ts, redis-failover-rebuild.test.ts)
// do to a sale: buy through every gateway, wait until the reconciler caught up with the primary serving
// the sale now, and judge the sale's ledger.

export const buyersOf = (label: string, count: number) => Array.from({ length: count }, (_, i) => `${label}-${i}`);

/** A burst through the gateways in turn; `atAnswer` runs once, when that many answers have come back. */
export function burst(s: SentinelSystem, saleId: number, label: string, count: number, atAnswer?: [number, () => Promise<unknown>]) {
  let fault: Promise<unknown> | undefined;
  let next = 0;
  const outcome = purchaseBurst(() => s.gateways[next++ % s.gateways.length]!.url, saleId, buyersOf(label, count), {
    connections: 8,
    onAnswer: (done) => {
      if (atAnswer && done === atAnswer[0]) fault = atAnswer[1]();
    },
  });
  return outcome.then(async (result) => {
    await fault;
    return result;
  });
}

/**
 * A buyer per gateway, each asking through their gateway until it answers them for sure (202, or 409
 * with the reservation a first try took): every gateway has found the new primary. Every try is kept
 * for the ledger.
 */
export async function buyUntilAnswered(s: SentinelSystem, saleId: number): Promise<BurstOutcome[]> {
  const tries: BurstOutcome[] = [];
  for (const [i, gateway] of s.gateways.entries()) {
    await until(
      async () => {
        const answer = await purchaseBurst(gateway.url, saleId, [`probe-${i}`], { connections: 1 });
        tries.push(answer);
        return answer;
      },
      (answer) => answer.accepted.size === 1 || answer.refused.ALREADY_PURCHASED === 1,
      60_000,
    );
  }
  return tries;
}

/**
 * Selling goes on: once the reconciler has caught up with the primary serving the sale (its rebuild after
 * the failover pauses the sale a moment, and a burst in that moment is all 503 SALE_PAUSED), bursts of
 * `count` new buyers until one is answered a 202. Again only if a burst had none: on a starved machine
 * the sentinels may count a primary down that was only slow and fail over again, and pause it again. Every
 * burst is kept for the ledger.
 */
export async function sellOn(s: SentinelSystem, saleId: number, label: string, count: number): Promise<BurstOutcome[]> {
  const bursts: BurstOutcome[] = [];
  await until(
    async () => {
      await convergedOnPrimary(s, saleId);
      const sold = await burst(s, saleId, `${label}-${bursts.length}`, count);
      bursts.push(sold);
      return sold.accepted.size;
    },
    (accepted) => accepted > 0,
    180_000,
  );
  return bursts;
}

/**
 * The sale's ledger once it has drained: no reservation doubled, no order without one, nothing oversold,
 * units in orders + remaining = stock. What was lost (a 202 that neither store holds) is returned, with
 * what the reconciler counted, for the test to judge.
 */
export async function expectLedger(s: SentinelSystem, saleId: number, bursts: BurstOutcome[], stock: number) {
  const { ctx } = s;
  const all = mergeBursts(...bursts);
  await convergedOnPrimary(s, saleId);
  await ctx.store.sale(saleId).waitForDrain(60_000);
  const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, all.accepted, new Set([...all.unknown, ...all.failed]));
  const stats = await saleStats(s, saleId);
  expect({
    duplicated: ledger.duplicated,
    unexpected: ledger.unexpected,
    oversold: ledger.oversold,
    total: ledger.unitsInDb + ledger.remaining,
    stock: ledger.stock,
  }).toEqual({
    duplicated: [],
    unexpected: [],
    oversold: 0,
    total: stock,
    stock,
  });
  return { ledger, all, counted: stats.lost.reservations };
}
