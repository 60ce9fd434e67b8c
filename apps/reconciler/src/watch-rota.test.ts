import { describe, expect, it } from 'vitest';
import type { WatchedSale } from '@flashsale/order-store';
import { WatchRota } from './watch-rota.ts';
import { watchedSale } from '../../../test/support/watched-sale.ts';

const sale = (id: number): WatchedSale => watchedSale({ id });
const sales = (n: number) => Array.from({ length: n }, (_, i) => sale(i + 1));

/** Ticks every `tickMs` from `from` to `to`, each sale looked at when due; `changed` says which changed. */
function run(rota: WatchRota, from: number, to: number, changed: (id: number) => boolean = () => false, tickMs = 100) {
  const looks = new Map<number, number[]>();
  for (let now = from; now < to; now += tickMs) {
    for (const due of rota.due(now)) {
      looks.set(due.id, [...(looks.get(due.id) ?? []), now]);
      rota.visited(due, now, changed(due.id));
    }
  }
  return { looks, total: [...looks.values()].reduce((sum, times) => sum + times.length, 0) };
}

describe('when the reconciler looks at each sale', () => {
  it('looks at each of a few sales every everyMs, changed or not', () => {
    const rota = new WatchRota({ everyMs: 1000, perSecond: 500 });
    rota.setSales(sales(50), 0);
    const { looks } = run(rota, 0, 10_000);
    for (const times of looks.values()) expect(times).toHaveLength(10);
    expect(rota.roundMs()).toBe(1000);
  });

  it('with 10,000 idle sales looks at no more than perSecond a second, each within sales / perSecond seconds', () => {
    const rota = new WatchRota({ everyMs: 1000, perSecond: 500 });
    rota.setSales(sales(10_000), 0);
    expect(rota.roundMs()).toBe(20_000);
    const { looks, total } = run(rota, 0, 60_000);
    // The first tick looks at a second's worth; then 50 a tick.
    expect(total).toBeLessThanOrEqual(500 + 500 * 60);
    expect(looks.size).toBe(10_000);
    for (const times of looks.values()) {
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeLessThanOrEqual(20_100);
    }
  });

  it('looks at a sale that keeps changing every everyMs even among 10,000 idle ones', () => {
    const rota = new WatchRota({ everyMs: 1000, perSecond: 500 });
    rota.setSales(sales(10_000), 0);
    // Once a look has seen it change (within its first round), it is looked at every second.
    run(rota, 0, 25_000, (id) => id === 4242);
    const busy = run(rota, 25_000, 35_000, (id) => id === 4242);
    const times = busy.looks.get(4242)!;
    expect(times.length).toBeGreaterThanOrEqual(9);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeLessThanOrEqual(1100);
  });

  it('looks at a new sale at once, forgets one no longer listed, and keeps the record of the last look', () => {
    const rota = new WatchRota({ everyMs: 1000, perSecond: 500 });
    rota.setSales(sales(3), 0);
    run(rota, 0, 100);
    rota.setSales([...sales(2), sale(9)], 100);
    expect(rota.due(150).map((s) => s.id)).toEqual([9]);
    rota.visited({ ...sale(9), checkpoint: { reservations: 1, units: 1, at: 5, streamId: '5-0' } }, 150, true);
    expect(rota.saleIds()).toEqual([1, 2, 9]);
    expect(rota.due(1200).find((s) => s.id === 9)?.checkpoint?.streamId).toBe('5-0');
  });
});
