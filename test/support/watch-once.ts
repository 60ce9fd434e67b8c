import type { Verdict } from '@flashsale/sales';
import { listSalesToWatch, retireFinishedSales, watchOneSale, type StateWatcherDeps } from '@flashsale/sales/testing';

/**
 * One whole pass of the reconciler's watch, as its loop spreads over the rota (watch-rota.ts): finish
 * unfinished creates, look at every settled sale once, retire the finished ones. The verdict of each
 * sale looked at.
 */
export async function watchOnce(deps: StateWatcherDeps): Promise<Map<number, Verdict>> {
  const watched = await listSalesToWatch(deps);
  const verdicts = new Map<number, Verdict>();
  for (const sale of watched) {
    if (!sale.settled) continue;
    const visit = await watchOneSale(deps, sale);
    if (visit) verdicts.set(sale.id, visit.verdict);
  }
  await retireFinishedSales(deps, watched);
  return verdicts;
}
