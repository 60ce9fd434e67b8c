import { describe, expect, it } from 'vitest';
import { SaleSchedule, type SaleScheduleOptions } from './sale-schedule.ts';

const OPTIONS: SaleScheduleOptions = {
  sweepMs: 250,
  sweepPerSecond: 2000,
  hotMs: 2000,
  claimEveryMs: 1000,
  activeForClaimsMs: 5000,
  coldClaimEveryMs: 15_000,
  burst: 1000,
};
const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Runs rounds every `stepMs` from `from` to `to` (ms), counting each sale's reads and claims. */
function simulate(schedule: SaleSchedule, from: number, to: number, stepMs = 5) {
  const reads = new Map<number, number[]>();
  let claims = 0;
  for (let now = from; now < to; now += stepMs) {
    const round = schedule.round(now);
    claims += round.claim.length;
    for (const saleId of round.read) reads.set(saleId, [...(reads.get(saleId) ?? []), now]);
  }
  const total = [...reads.values()].reduce((sum, times) => sum + times.length, 0);
  return { reads, total, claims };
}

/** The longest time any of `sales` went without a read between `from` and `to`. */
function longestGap(reads: Map<number, number[]>, sales: number[], from: number, to: number): number {
  let longest = 0;
  for (const saleId of sales) {
    const times = [from, ...(reads.get(saleId) ?? []), to];
    for (let i = 1; i < times.length; i++) longest = Math.max(longest, times[i]! - times[i - 1]!);
  }
  return longest;
}

describe('the sales a worker reads in a round', () => {
  it('sweeps every one of a few sales each sweepMs, and no more often', () => {
    const schedule = new SaleSchedule(OPTIONS);
    schedule.setSales(ids(10), 0);
    simulate(schedule, 0, 100); // the first whole sweep, at once
    const { reads, total } = simulate(schedule, 100, 10_100);
    expect(total).toBeGreaterThanOrEqual(10 * 39);
    expect(total).toBeLessThanOrEqual(10 * 41);
    expect(longestGap(reads, ids(10), 100, 10_100)).toBeLessThanOrEqual(260);
  });

  it('with 10,000 sales reads no more than sweepPerSecond a second, each sale within sales / rate seconds', () => {
    const schedule = new SaleSchedule(OPTIONS);
    schedule.setSales(ids(10_000), 0);
    const start = simulate(schedule, 0, 100);
    // After a start, one whole sweep goes at once, in rounds of `burst`, besides the sweep's own pace.
    expect(start.total).toBeGreaterThanOrEqual(10_000);
    expect(start.total).toBeLessThanOrEqual(10_000 + 2000 * 0.1 + 1);
    const { reads, total, claims } = simulate(schedule, 100, 20_100);
    expect(total).toBeLessThanOrEqual(2000 * 20 + 10);
    expect(total).toBeGreaterThanOrEqual(2000 * 20 - 10);
    expect(longestGap(reads, ids(10_000), 100, 20_100)).toBeLessThanOrEqual(5_010);
    // A sale not active lately is claimed when it is swept and its last claim is coldClaimEveryMs (15 s)
    // old: every sale in the first whole sweep at start, then each once more in these 20 s.
    expect(start.claims).toBe(10_000);
    expect(claims).toBeGreaterThanOrEqual(10_000 - 10);
    expect(claims).toBeLessThanOrEqual(10_000);
  });

  it('reads a signalled sale every round for hotMs, then only when swept', () => {
    const schedule = new SaleSchedule({ ...OPTIONS, sweepMs: 60_000, sweepPerSecond: 1 });
    schedule.setSales(ids(100), 0);
    simulate(schedule, 0, 1000);
    schedule.signal(42, 1000);
    const hot = simulate(schedule, 1000, 3000);
    expect(hot.reads.get(42)).toHaveLength(400);
    const cold = simulate(schedule, 3000, 5000);
    expect(cold.reads.get(42)).toBeUndefined();
    schedule.worked(42, 5000);
    expect(simulate(schedule, 5000, 5010).reads.get(42)).toHaveLength(2);
  });

  it('reads a sale whose read gave part of a batch again only batchWaitMs later, and waits that long when nothing else is due', () => {
    const schedule = new SaleSchedule({ ...OPTIONS, sweepMs: 60_000, sweepPerSecond: 1 });
    schedule.setSales([7, 8], 0);
    schedule.round(0);
    schedule.signal(7, 1);
    expect(schedule.round(1).read).toEqual([7]);
    schedule.worked(7, 2);
    schedule.partlyRead(7, 2, 20);
    expect(schedule.round(3).read).toEqual([]);
    expect(schedule.idleWaitMs(3, 5, 10_000)).toBe(19);
    expect(schedule.round(21).read).toEqual([]);
    expect(schedule.round(22).read).toEqual([7]);
    // Another hot sale that may be read now keeps the usual pause.
    schedule.partlyRead(7, 22, 20);
    schedule.signal(8, 23);
    expect(schedule.idleWaitMs(23, 5, 10_000)).toBe(5);
    expect(schedule.round(24).read).toEqual([8]);
    // 0 waits not at all.
    schedule.partlyRead(8, 25, 0);
    expect(schedule.round(26).read).toEqual([8]);
  });

  it('claims a sale read every round once per claimEveryMs', () => {
    const schedule = new SaleSchedule({ ...OPTIONS, sweepMs: 60_000, sweepPerSecond: 1 });
    schedule.setSales([7], 0);
    schedule.round(0);
    schedule.signal(7, 1);
    const { reads, claims } = simulate(schedule, 1, 1950);
    expect(reads.get(7)!.length).toBeGreaterThan(300);
    expect(claims).toBe(1);
  });

  it('waits for the next sweep while nothing is hot, and a signal ends the wait', async () => {
    const schedule = new SaleSchedule({ ...OPTIONS, sweepMs: 1000 });
    schedule.setSales(ids(4), 0);
    schedule.round(0);
    expect(schedule.round(1).read).toEqual([]);
    // 4 sales a second: the next sweep is a quarter of a second away.
    expect(schedule.idleWaitMs(1, 5, 10_000)).toBeCloseTo(249, 0);
    const woken = schedule.woken();
    schedule.signal(3, 2);
    await woken;
    expect(schedule.idleWaitMs(2, 5, 10_000)).toBe(5);
    expect(schedule.round(2).read).toEqual([3]);
  });

  it('asks for the list again when a sale it does not know is signalled, and forgets sales taken off the list', () => {
    const schedule = new SaleSchedule({ ...OPTIONS, sweepMs: 60_000, sweepPerSecond: 1 });
    schedule.setSales([1, 2], 0);
    schedule.round(0);
    schedule.signal(3, 1);
    expect(schedule.wantsSales()).toBe(true);
    schedule.signal(2, 1);
    schedule.setSales([1, 3], 2);
    expect(schedule.wantsSales()).toBe(false);
    // Sale 3, signalled before it was listed, is hot from the list read on; 2 is forgotten.
    expect(schedule.round(3).read).toEqual([3]);
  });

  it('sweeps every sale at once after sweepAll (a lost subscription), then goes back to its pace', () => {
    const schedule = new SaleSchedule({ ...OPTIONS, sweepMs: 60_000, sweepPerSecond: 10 });
    schedule.setSales(ids(2500), 0);
    simulate(schedule, 0, 100);
    expect(simulate(schedule, 100, 1100).total).toBeLessThanOrEqual(11);
    schedule.sweepAll();
    expect(simulate(schedule, 1100, 1120).total).toBe(2500 + 1);
  });
});
