import { Queue, QueueEvents, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { connectRedis, type RedisTargetLike } from '@flashsale/redis-store';

/**
 * The BullMQ queues of the jobs that must run one at a time per sale, be retried and be visible:
 * reconciliations (one job id per sale, so two can never run for the same sale) and the periodic audit.
 */

export const RECONCILE_QUEUE = 'reconcile';
export const AUDIT_QUEUE = 'audit';

/**
 * Why a sale is being reconciled: an operator asked; the reconciler saw its Redis state lost or stale;
 * it found the sale paused with no reconciliation running (one was interrupted and gave up); or the audit
 * confirmed the ledger off balance (`drift`: either store may have gone back in time); or MySQL is now
 * another server than the one last seen (`mysql_changed`: a replica promoted, which may lack commits).
 */
export type ReconcileReason = 'operator' | 'lost' | 'stale' | 'interrupted' | 'drift' | 'mysql_changed';

export interface ReconcileJobData {
  saleId: number;
  reason: ReconcileReason;
}

export interface ReconcileResult {
  saleId: number;
  remaining: number;
  buyers: number;
  tookMs: number;
  /** Reservations and units answered 202 but lost with Redis's data, counted by this reconciliation. */
  lost: { reservations: number; units: number };
  /** What the reconciliation found the state it replaced to be: intact, or one that had lost reservations. */
  judgement: 'intact' | 'lost';
  /**
   * Reservations MySQL had lost (restored from a dump, a replica promoted behind) that Redis still held,
   * written again as orders under their own ids before the rebuild.
   */
  restored?: { reservations: number; units: number };
  /**
   * Of `lost`, the reservations named (lost_reservations): MySQL had lost them and could not take them
   * back from Redis's records. Listed by GET /api/admin/sales/:id/losses. Absent when none were.
   */
  named?: { reservations: number; units: number };
  /**
   * Orders MySQL held live that Redis had given back (MySQL lost their cancel or expiry), closed again
   * before the restore. Absent when none were.
   */
  reclosed?: number;
}

/**
 * BullMQ's keys under the deployment's REDIS_PREFIX, in one hash slot (`{bull}`) as BullMQ needs on
 * Redis Cluster.
 */
export function bullPrefix(redisPrefix: string): string {
  return `${redisPrefix}:{bull}`;
}

/** One job id per sale: BullMQ refuses a second job with the id of one that exists. */
export function reconcileJobId(saleId: number): string {
  return `sale-${saleId}`;
}

/**
 * A connection as BullMQ needs it: commands wait for a reconnect rather than fail. On a cluster, every key
 * of BullMQ's is under bullPrefix's `{bull}` tag, so each queue's scripts run on one slot.
 */
export function bullConnection(target: RedisTargetLike): Redis {
  const connection = connectRedis(target, { maxRetriesPerRequest: null, connectionName: 'bullmq' });
  // Reconnecting is automatic; the errors also reach BullMQ's own 'error' events, which are logged.
  connection.on('error', () => undefined);
  return connection;
}

export interface ReconcileJobs {
  queue: Queue<ReconcileJobData, ReconcileResult>;
  events: QueueEvents;
  close(): Promise<void>;
}

export function createReconcileJobs(target: RedisTargetLike, redisPrefix: string): ReconcileJobs {
  const queueConnection = bullConnection(target);
  const eventsConnection = bullConnection(target);
  const prefix = bullPrefix(redisPrefix);
  const queue = new Queue<ReconcileJobData, ReconcileResult>(RECONCILE_QUEUE, { connection: queueConnection, prefix });
  const events = new QueueEvents(RECONCILE_QUEUE, { connection: eventsConnection, prefix });
  queue.on('error', () => undefined);
  events.on('error', () => undefined);
  return {
    queue,
    events,
    async close() {
      await Promise.all([queue.close(), events.close()]);
      queueConnection.disconnect();
      eventsConnection.disconnect();
    },
  };
}

const UNFINISHED = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

/** Whether a reconciliation of the sale is queued, waiting out a retry, or running. */
export async function reconcileUnfinished(queue: Queue<ReconcileJobData, ReconcileResult>, saleId: number): Promise<boolean> {
  const job = await queue.getJob(reconcileJobId(saleId));
  return job !== undefined && UNFINISHED.has(await job.getState());
}

/**
 * Queues a reconciliation of a sale unless one is already queued or running; then `running` is true
 * and the job returned is that one. A finished job of the same sale is removed first so its id can be
 * used again (it stays visible until then).
 */
export async function enqueueReconcile(
  queue: Queue<ReconcileJobData, ReconcileResult>,
  saleId: number,
  reason: ReconcileReason,
): Promise<{ job: Job<ReconcileJobData, ReconcileResult>; running: boolean }> {
  const jobId = reconcileJobId(saleId);
  const existing = await queue.getJob(jobId);
  if (existing) {
    const state = await existing.getState();
    // Waiting out its backoff before another attempt: someone is asking now, so it runs now.
    if (state === 'delayed') await existing.promote().catch(() => undefined);
    if (UNFINISHED.has(state)) return { job: existing, running: true };
    await existing.remove().catch(() => undefined);
  }
  const job = await queue.add(
    'reconcile',
    { saleId, reason },
    {
      jobId,
      // Retried for as long as it fails (typically: the stream does not drain because no worker runs), at
      // a steady pace: an exponential backoff would leave the sale paused for hours after the workers
      // are back. The sale stays paused meanwhile, which is what keeps it from overselling.
      attempts: 1_000_000,
      backoff: { type: 'fixed', delay: 2000 },
      removeOnComplete: { age: 24 * 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  );
  // Should another process have queued the same id in between, add() returns that job: waiting for it
  // is what this caller wants too.
  return { job, running: false };
}
