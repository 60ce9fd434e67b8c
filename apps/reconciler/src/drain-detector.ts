import { setTimeout as sleep } from 'node:timers/promises';
import { DrainTimeout } from '@flashsale/domain';
import { streamBacklog, type ScriptedRedis, type StreamBacklog } from '@flashsale/redis-store';

/**
 * Waits until nothing of the sale's stream is on its way to MySQL: no entry undelivered (lag 0) and none
 * delivered but unacknowledged (pending 0). Entries a dead worker holds count as pending until a live
 * worker takes them over, so this also waits for that. Dead-lettered entries are settled: they will not
 * become orders, and the rebuild gives their units back. A lost stream has nothing left to drain.
 */
export async function waitForDrain(
  redis: ScriptedRedis,
  prefix: string,
  saleId: number,
  { timeoutMs, pollMs = 25 }: { timeoutMs: number; pollMs?: number },
): Promise<StreamBacklog> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const backlog = await streamBacklog(redis, prefix, saleId);
    if (backlog.lag === 0 && backlog.pending === 0) return backlog;
    if (Date.now() >= deadline) {
      throw new DrainTimeout(`sale ${saleId}: stream not drained after ${timeoutMs} ms (lag ${backlog.lag}, pending ${backlog.pending}); are the workers running?`);
    }
    await sleep(pollMs);
  }
}
