import { Queue } from 'bullmq';
import type { RedisTargetLike } from '@flashsale/redis-store';
import { AUDIT_QUEUE, RECONCILE_QUEUE, bullConnection, bullPrefix } from './reconcile-queue.ts';

/** Jobs of one queue by state, as BullMQ counts them. */
export type QueueCounts = Record<'waiting' | 'active' | 'delayed' | 'completed' | 'failed', number>;

const STATES = ['waiting', 'active', 'delayed', 'completed', 'failed'] as const;

/**
 * The BullMQ queues' job counts for the operator's view (the dashboard's queue table): the reconcile queue
 * and the audit's. One connection, opened at the first read; `close` ends it.
 */
export function openQueueCounts(target: RedisTargetLike, redisPrefix: string) {
  let opened: { connection: ReturnType<typeof bullConnection>; queues: Record<'reconcile' | 'audit', Queue> } | undefined;
  return {
    async read(): Promise<Record<'reconcile' | 'audit', QueueCounts>> {
      if (!opened) {
        const connection = bullConnection(target);
        const options = { connection, prefix: bullPrefix(redisPrefix) };
        opened = { connection, queues: { reconcile: new Queue(RECONCILE_QUEUE, options), audit: new Queue(AUDIT_QUEUE, options) } };
        for (const queue of Object.values(opened.queues)) queue.on('error', () => undefined);
      }
      const [reconcile, audit] = await Promise.all([
        opened.queues.reconcile.getJobCounts(...STATES),
        opened.queues.audit.getJobCounts(...STATES),
      ]);
      return { reconcile: reconcile as QueueCounts, audit: audit as QueueCounts };
    },
    async close(): Promise<void> {
      if (!opened) return;
      await Promise.all(Object.values(opened.queues).map((queue) => queue.close()));
      opened.connection.disconnect();
      opened = undefined;
    },
  };
}
