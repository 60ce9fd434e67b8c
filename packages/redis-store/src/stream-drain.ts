import { setTimeout as sleep } from 'node:timers/promises';
import { DrainTimeout } from '@flashsale/domain';
import type { SaleRef } from './store-ref.ts';
import { explainBacklog, streamBacklog, type StreamBacklog } from './stream-backlog.ts';

/**
 * Whether nothing of a sale's stream is on its way to MySQL: no entry undelivered (lag 0) and none
 * delivered but unacknowledged (pending 0). Entries a dead worker holds count as pending until a live
 * worker takes them over. Dead-lettered entries are settled: they will not become orders (a rebuild gives
 * their units back). A lost stream has nothing left to drain.
 */
export function isDrained(backlog: StreamBacklog): boolean {
  return backlog.lag === 0 && backlog.pending === 0;
}

/**
 * Waits until the sale's stream has drained (see isDrained), looking every `pollMs`; fails with
 * DrainTimeout after `timeoutMs`, saying why (explainBacklog: what follows the group's position, who holds
 * what is pending). The reconciler's wait before a rebuild (RECONCILE_DRAIN_TIMEOUT_MS), and
 * the tests' and runners' before they count the orders.
 */
export async function waitForDrain(sale: SaleRef, timeoutMs = 30_000, pollMs = 25): Promise<StreamBacklog> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const backlog = await streamBacklog(sale);
    if (isDrained(backlog)) return backlog;
    if (Date.now() >= deadline) {
      const why = await explainBacklog(sale);
      throw new DrainTimeout(
        `sale ${sale.saleId}: stream not drained after ${timeoutMs} ms (lag ${backlog.lag}, pending ${backlog.pending}): ${why}`,
      );
    }
    await sleep(pollMs);
  }
}
