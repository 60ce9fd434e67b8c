import { emptyTally, settleReturns, type ReturnTally } from './order-returns.ts';
import type { SalesDeps } from './sales-deps.ts';

/** What one pass did. */
export interface ExpiryPassResult extends ReturnTally {
  /** Orders this pass expired in MySQL. */
  expired: number;
  /** Orders this pass paid: their payment arrived before payBy and had not reached MySQL (receivePayment). */
  paidFromArrivals: number;
}

/**
 * One pass of the expiry: closes the unpaid orders past their payBy (MySQL's clock), gives their units
 * back to Redis, then settles any return still owed from before (a cancel whose own return failed, a
 * process that died between the commit and the return). Every step is safe to run from several
 * processes at once and to repeat after a crash (the argument is settleReturns'); the state lives in
 * MySQL, so a pass that fails (MySQL or Redis away) is simply run again later: orders expire late, never
 * wrongly.
 */
export async function runExpiryPass(deps: SalesDeps, batchSize: number): Promise<ExpiryPassResult> {
  // A sale whose payments Redis cannot tell (Redis away, its keys broken) expires nothing this pass:
  // an order may not be expired under a payment that arrived in time. Late, never wrongly.
  const unreadable: number[] = [];
  const arrivedPayments = (saleId: number) =>
    deps.redis
      .sale(saleId)
      .heldPayments()
      .catch(() => {
        unreadable.push(saleId);
        return null;
      });
  let { owed, paid, settledArrivals } = await deps.mysql.expireDueOrders(batchSize, arrivedPayments);
  if (unreadable.length > 0) {
    // Their orders come first by payBy and would take every batch: the other sales' go now.
    const others = await deps.mysql.expireDueOrders(batchSize, arrivedPayments, [...unreadable]);
    owed = [...owed, ...others.owed];
    paid += others.paid;
    settledArrivals = new Map([...settledArrivals, ...others.settledArrivals]);
    deps.logger.warn(
      { sales: unreadable.length, first: unreadable.slice(0, 10) },
      'expiry waits: Redis cannot tell which payments arrived for these sales',
    );
  }
  for (const [saleId, eventIds] of settledArrivals) {
    // Best effort: a record left behind is read again by the next expiry of the sale and found settled.
    await deps.redis
      .sale(saleId)
      .forgetPaymentArrivals(eventIds)
      .catch((error: unknown) =>
        deps.logger.warn({ err: error, saleId }, 'payment arrival records not dropped; the next expiry pass drops them'),
      );
  }
  if (paid > 0) deps.logger.info({ paid }, 'expiry paid orders whose payment arrived before payBy while MySQL could not take it');
  const tally = await settleReturns(deps, owed, emptyTally());
  // The returns left over, oldest first, skipping sales that cannot take them now (a rebuild will):
  // a sale whose Redis state was lost must not hold up every other sale's returns.
  for (let page = 0; page < MAX_PAGES; page++) {
    const left = await deps.mysql.pendingReturns(batchSize, [...tally.waitingSales]);
    if (left.length === 0) break;
    await settleReturns(deps, left, tally);
    if (left.length < batchSize) break;
  }
  return { ...tally, expired: owed.length, paidFromArrivals: paid };
}

/** Pages of leftover returns one pass settles at most: the pass stays short, the next one goes on. */
const MAX_PAGES = 4;
