import { expireDueOrders, pendingReturns } from '@flashsale/order-store';
import { emptyTally, settleReturns, type ReturnDeps, type ReturnTally } from './stock-returner.ts';

/** What one pass did. */
export interface ExpiryPassResult extends ReturnTally {
  /** Orders this pass expired in MySQL. */
  expired: number;
}

/**
 * One pass of the expiry: closes the unpaid orders past their payBy (MySQL's clock), gives their units
 * back to Redis, then settles any return still owed from before (a cancel whose own return failed, a
 * process that died between the commit and the return). Every step is safe to run from several
 * processes at once and to repeat after a crash (see stock-returner.ts); the state lives in MySQL, so a
 * pass that fails (MySQL or Redis away) is simply run again later: orders expire late, never wrongly.
 */
export async function runExpiryPass(deps: ReturnDeps, batchSize: number): Promise<ExpiryPassResult> {
  const owed = await expireDueOrders(deps.prisma, batchSize);
  const tally = await settleReturns(deps, owed, emptyTally());
  // The returns left over, oldest first, skipping sales that cannot take them now (a rebuild will):
  // a sale whose Redis state was lost must not hold up every other sale's returns.
  for (let page = 0; page < MAX_PAGES; page++) {
    const left = await pendingReturns(deps.prisma, batchSize, [...tally.waitingSales]);
    if (left.length === 0) break;
    await settleReturns(deps, left, tally);
    if (left.length < batchSize) break;
  }
  return { ...tally, expired: owed.length };
}

/** Pages of leftover returns one pass settles at most: the pass stays short, the next one goes on. */
const MAX_PAGES = 4;
