import { AppError, withDeadline } from '@flashsale/domain';
import {
  enqueueReconcile,
  reconcileJobId,
  reconcileUnfinished,
  type ReconcileJobs,
  type ReconcileReason,
  type ReconcileResult,
} from '@flashsale/jobs';
import type { SalesDeps } from './sales-deps.ts';

/** How an operator's request for a reconciliation is made (the admin route's and the command's terms). */
export interface ReconcileRequest {
  /**
   * How long the enqueue may take, and what its deadline's error calls the queue: BullMQ's connection
   * waits for Redis for as long as it is away, so an operator asking meanwhile is told so in time.
   */
  enqueueWithin: { ms: number; what: string };
  /** How long to wait for the reconciliation once it is queued (the job goes on after). */
  waitMs: number;
  /** One of the sale already queued or running: refused (RECONCILE_IN_PROGRESS), or waited for. */
  ifRunning: 'refuse' | 'wait';
  /** Told once the job is queued, or found queued or running, before the wait. */
  onQueued?(running: boolean): void;
}

/** The reconciliation was queued but did not finish within the wait (or failed for good); it may go on. */
export class ReconcileUnfinished extends Error {
  constructor(
    readonly jobId: string | undefined,
    cause: unknown,
  ) {
    super((cause as Error).message, { cause });
  }
}

/**
 * An operator's reconciliation of one sale (POST /api/admin/sales/:id/reconcile, `npm run reconcile`):
 * the sale checked in MySQL, a job queued on the reconciler's queue (one job id per sale, so never two
 * at once, whoever asks), then waited for. Nothing is written here: the job, run by a reconciler's worker,
 * is the protocol (sale-reconciliation.ts); a wait given up leaves it running.
 */
export async function requestReconciliation(
  deps: Pick<SalesDeps, 'mysql'>,
  jobs: ReconcileJobs,
  saleId: number,
  request: ReconcileRequest,
): Promise<ReconcileResult> {
  if (!(await deps.mysql.sale(saleId).find())) throw new AppError('SALE_NOT_FOUND', { saleId });
  const { job, running } = await withDeadline(
    enqueueReconcile(jobs.queue, saleId, 'operator'),
    request.enqueueWithin.ms,
    request.enqueueWithin.what,
  );
  request.onQueued?.(running);
  if (running && request.ifRunning === 'refuse') throw new AppError('RECONCILE_IN_PROGRESS', { saleId }, { jobId: job.id });
  try {
    return await job.waitUntilFinished(jobs.events, request.waitMs);
  } catch (error) {
    throw new ReconcileUnfinished(job.id, error);
  }
}

/**
 * The watch's and the audit's request: a reconciliation of the sale queued for `reason`, unless one is
 * queued or running. A sale seen paused with no job (`interrupted`) is taken up only if it is still
 * paused now with none: a reconciliation may have resumed it and finished since the look.
 */
export async function queueReconciliation(
  deps: Pick<SalesDeps, 'redis'>,
  jobs: ReconcileJobs,
  saleId: number,
  reason: ReconcileReason,
): Promise<void> {
  if (reason === 'interrupted') {
    if (await reconcileUnfinished(jobs.queue, saleId)) return;
    if (!(await deps.redis.sale(saleId).snapshot()).paused) return;
  }
  await enqueueReconcile(jobs.queue, saleId, reason);
}

/** A sale's reconciliation as the queue holds it (the dashboard's panel): queued, running or the last one; null when none. */
export async function lastReconciliation(jobs: ReconcileJobs, saleId: number) {
  const job = await jobs.queue.getJob(reconcileJobId(saleId));
  if (!job) return null;
  return {
    state: await job.getState(),
    reason: job.data.reason,
    finishedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
    result: job.returnvalue ?? null,
  };
}
