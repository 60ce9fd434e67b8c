import { expect } from 'vitest';
import { faultLedgerOf, mergeBursts, purchaseBurst, waitForDrain, type BurstOutcome } from '@flashsale/harness';
import { snapshotSale } from '@flashsale/redis-store';
import type { SentinelSystem } from './system.ts';
import { saleStats } from './cluster-sales.ts';
import { until } from './until.ts';

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
 * The sale's ledger once it has drained: no reservation doubled, no order without one, nothing oversold,
 * units in orders + remaining = stock. What was lost (a 202 that neither store holds) is returned, with
 * what the reconciler counted, for the test to judge.
 */
export async function expectLedger(s: SentinelSystem, saleId: number, bursts: BurstOutcome[], stock: number) {
  const { ctx } = s;
  const all = mergeBursts(...bursts);
  await convergedOnPrimary(s, saleId);
  await waitForDrain(ctx.redis, ctx.config.REDIS_PREFIX, saleId, 60_000);
  const ledger = await faultLedgerOf(ctx.redis, ctx.prisma, ctx.config.REDIS_PREFIX, saleId, all.accepted, new Set([...all.unknown, ...all.failed]));
  const stats = await saleStats(s, saleId);
  expect({ duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold, total: ledger.unitsInDb + ledger.remaining, stock: ledger.stock }).toEqual({
    duplicated: [],
    unexpected: [],
    oversold: 0,
    total: stock,
    stock,
  });
  return { ledger, all, counted: stats.lost.reservations };
}

/**
 * Until the reconciler has caught up with the primary serving the sale now: the sale's checkpoint is of
 * that server's history of writes (master_replid), and it is not paused. A failover changes the history,
 * and the watch's first look after it asks for a rebuild (the sale's checkpoint dates from its publish at
 * the latest), which records the rebuilt state's checkpoint in the new history before it resumes; until
 * then the promoted primary may hold units MySQL has sold. A second failover of a starved machine starts
 * it over. Returned for the failure message.
 */
export async function convergedOnPrimary(s: SentinelSystem, saleId: number) {
  const { ctx } = s;
  return until(
    async () => {
      const snapshot = await snapshotSale(ctx.redis, ctx.config.REDIS_PREFIX, saleId);
      const row = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
      return {
        primary: snapshot.replicationId ?? null,
        checkpoint: row.checkpointReplicationId,
        paused: snapshot.paused,
        generation: snapshot.generation === row.redisGeneration,
      };
    },
    (state) => state.primary !== null && state.checkpoint === state.primary && !state.paused && state.generation,
    120_000,
  );
}
