import { type OwedReturn } from '@flashsale/order-store';
import type { SalesDeps } from './sales-deps.ts';

/** What one call did with the returns it was given. */
export interface ReturnTally {
  /** Units given back now (orders: `orders`). */
  units: number;
  orders: number;
  /** Given back before (a repeat): settled in MySQL now. */
  repeated: number;
  /** Left pending: the sale is not in Redis, or holds another generation (a rebuild will settle them). */
  waiting: number;
  /** Refused by the script's stock guard (never expected): left pending and logged. */
  refused: number;
  /** Sales whose returns had to wait, so a caller does not ask again in the same pass. */
  waitingSales: Set<number>;
}

export function emptyTally(): ReturnTally {
  return { units: 0, orders: 0, repeated: 0, waiting: 0, refused: 0, waitingSales: new Set() };
}

/**
 * Gives closed orders' units back to Redis and records it in MySQL: the second half of a cancel or an
 * expiry, whose first half (the order's status, sold_units, the stock_returns row) MySQL committed.
 * Applies `owed` to Redis, sale by sale, and marks in MySQL the ones Redis now holds.
 *
 * Crash points. MySQL first (the close and its stock_returns row, committed by the caller), then Redis
 * (return-units-4.lua), then MySQL again (markReturned). Each unit comes back exactly once, whatever dies
 * where: the return script gives a reservation's units at most once per Redis generation (its `returned`
 * hash), and only to the generation the order closed in; a rebuild counts every closed order's units as
 * remaining and settles their rows in the transaction that switches the generation. So this may run any
 * number of times, from any number of processes, before or after a crash: dying after the close, the
 * row stays pending and the next expiry pass applies it; dying after Redis, the repeat is refused by
 * Redis as given already and the row is marked; a row whose state was rebuilt is refused by its
 * generation and settled by the rebuild.
 */
export async function settleReturns(deps: SalesDeps, owed: OwedReturn[], tally = emptyTally()): Promise<ReturnTally> {
  const groups = new Map<string, OwedReturn[]>();
  for (const o of owed) {
    const key = `${o.saleId}|${o.generation}`;
    const group = groups.get(key);
    if (group) group.push(o);
    else groups.set(key, [o]);
  }
  for (const group of groups.values()) {
    const { saleId, generation } = group[0]!;
    const inRedis = deps.redis.sale(saleId);
    const outcome = await inRedis.returnUnits(generation, group);
    if (outcome.kind !== 'applied') {
      tally.waiting += group.length;
      tally.waitingSales.add(saleId);
      deps.logger.debug({ saleId, generation, outcome }, "returns wait for the sale's rebuild");
      continue;
    }
    const settled: string[] = [];
    let unitsBack = 0;
    outcome.results.forEach((result, i) => {
      const o = group[i]!;
      if (result === 'refused') {
        tally.refused++;
        deps.logger.error(
          { saleId, reservationId: o.reservationId, quantity: o.quantity },
          'return refused: it would put remaining above stock; left for the reconciler',
        );
        return;
      }
      settled.push(o.reservationId);
      if (result === 'returned') {
        tally.orders++;
        tally.units += o.quantity;
        unitsBack += o.quantity;
      } else {
        tally.repeated++;
      }
    });
    // Gateways that knew the sale as sold out (and who held its units) forget it: the units sell again.
    if (unitsBack > 0) await inRedis.announceChanged();
    await deps.mysql.markReturned(settled);
  }
  return tally;
}
