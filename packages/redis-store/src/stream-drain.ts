import { setTimeout as sleep } from 'node:timers/promises';
import { DrainTimeout } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
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
export async function waitForDrain(
  redis: ScriptedRedis,
  prefix: string,
  saleId: number,
  timeoutMs = 30_000,
  pollMs = 25,
): Promise<StreamBacklog> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const backlog = await streamBacklog(redis, prefix, saleId);
    if (isDrained(backlog)) return backlog;
    if (Date.now() >= deadline) {
      const why = await explainBacklog(redis, prefix, saleId);
      throw new DrainTimeout(
        `sale ${saleId}: stream not drained after ${timeoutMs} ms (lag ${backlog.lag}, pending ${backlog.pending}): ${why}`,
      );
    }
    await sleep(pollMs);
  }
}
