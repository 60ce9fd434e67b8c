import { expect } from 'vitest';
import { faultLedgerOf } from '@flashsale/harness';
import { redisNow, saleKeys } from '@flashsale/redis-store';
import type { System } from './system.ts';
import { doorBuyer } from './door.ts';
import { until } from './until.ts';

/** What the door's fault tests need of a running system (one Redis or a cluster). */
type Running = Pick<System, 'ctx' | 'gateways'>;
export type DoorBuyer = ReturnType<typeof doorBuyer>;

/** `n` buyers join before the start through the first gateway; once it has passed, they are returned in queue order (by rank). */
export async function queueUp(running: Running, saleId: number, startsAt: number, n: number, label: string): Promise<DoorBuyer[]> {
  const buyers = Array.from({ length: n }, (_, i) => doorBuyer(running.gateways[0]!.url, saleId, `${label}-${i}`));
  for (const b of buyers) expect((await b.join()).status).toBe(200);
  await until(
    () => redisNow(running.ctx.redis),
    (now) => now >= startsAt,
  );
  const ranked = await Promise.all(buyers.map(async (b) => ({ b, rank: await b.rank() })));
  return ranked.sort((x, y) => x.rank - y.rank).map((r) => r.b);
}

/** The turns Redis holds (user -> admittedUntil, negative once used, 0 once abandoned). */
export async function turnsOf(running: Running, saleId: number): Promise<Map<string, number>> {
  const flat = await running.ctx.redis.zrange(saleKeys(running.ctx.config.REDIS_PREFIX, saleId).turns, 0, -1, 'WITHSCORES');
  const turns = new Map<string, number>();
  for (let i = 0; i < flat.length; i += 2) turns.set(flat[i]!, Number(flat[i + 1]));
  return turns;
}

/**
 * Every turn was given in queue order: along `inOrder`, admittedUntil never goes down (abandoned turns,
 * 0, keep no date), and the admitted are a prefix (nobody skipped).
 */
export function expectAdmittedInOrder(turns: Map<string, number>, inOrder: DoorBuyer[]): void {
  const given = inOrder.filter((b) => turns.has(b.userId)).map((b) => ({ who: b.userId, at: Math.abs(turns.get(b.userId)!) }));
  const dated = given.filter((g) => g.at !== 0);
  for (let i = 1; i < dated.length; i += 1)
    expect(dated[i]!.at, `${dated[i]!.who} admitted before ${dated[i - 1]!.who}`).toBeGreaterThanOrEqual(dated[i - 1]!.at);
  expect(inOrder.slice(0, given.length).map((b) => b.userId)).toEqual(given.map((g) => g.who));
}

/** The purchases of one test, each answered 202 recorded, and the ledger they must make. */
export function doorPurchases(running: Running) {
  const accepted = new Map<string, { userId: string; quantity: number }>();
  const record = (buyer: DoorBuyer, res: { status: number; body: Record<string, unknown> }) => {
    expect(res.status, `${buyer.userId}: ${JSON.stringify(res.body)}`).toBe(202);
    accepted.set(res.body.reservationId as string, { userId: buyer.userId, quantity: 1 });
  };
  return {
    /** Buys one unit (the buyer must be admitted). */
    async buy(buyer: DoorBuyer): Promise<void> {
      record(buyer, await buyer.purchase());
    },
    /** Records a purchase the test made itself, which must have been answered 202. */
    accepted: record,
    /** Once drained: every 202 one order, nothing else, nothing oversold, `units` in live orders. */
    async expectLedgerExact(saleId: number, units: number): Promise<void> {
      const { ctx } = running;
      await ctx.store.sale(saleId).waitForDrain(60_000);
      const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, accepted, new Set());
      expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
        lost: [],
        duplicated: [],
        unexpected: [],
        oversold: 0,
      });
      expect(ledger.unitsInDb).toBe(units);
    },
  };
}
