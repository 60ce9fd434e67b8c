import type { Verdict } from '@flashsale/sales';
import { listSalesToWatch, retireFinishedSales, watchOneSale, type SaleWatch } from '@flashsale/sales/testing';

/** The sales the last pass over each store found paused, as the reconciler's loop keeps them between passes. */
const pausedLastPass = new WeakMap<SaleWatch['redis'], Set<number>>();

/**
 * One whole pass of the reconciler's watch, as its loop spreads over the rota (watch-rota.ts): finish
 * unfinished creates, look at every settled sale once, retire the finished ones. The verdict of each
 * sale looked at. Passes over the same stores (a watch and its copies with other settings) remember, as
 * the loop does, which sales the last found paused.
 */
export async function watchOnce(watch: SaleWatch): Promise<Map<number, Verdict>> {
  const paused = pausedLastPass.get(watch.redis) ?? new Set<number>();
  pausedLastPass.set(watch.redis, paused);
  const watched = await listSalesToWatch(watch);
  const verdicts = new Map<number, Verdict>();
  for (const sale of watched) {
    if (!sale.settled) continue;
    const visit = await watchOneSale(watch, sale, { pausedBefore: paused.has(sale.id) });
    if (visit?.verdict.kind === 'paused') paused.add(sale.id);
    else if (visit) paused.delete(sale.id);
    if (visit) verdicts.set(sale.id, visit.verdict);
  }
  await retireFinishedSales(watch, watched);
  return verdicts;
}
