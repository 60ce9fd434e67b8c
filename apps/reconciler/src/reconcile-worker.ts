import { UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { SaleNotFound } from '@flashsale/domain';
import type { Logger } from '@flashsale/runtime';
import { RECONCILE_QUEUE, bullPrefix, type ReconcileJobData, type ReconcileResult, type Sales } from '@flashsale/sales';
import { ErrorBackoff } from './error-backoff.ts';

export interface ReconcileWorkerOptions {
  /** REDIS_PREFIX: the queue's keys are under it. */
  prefix: string;
  /** BullMQ's connection (maxRetriesPerRequest: null), for this worker alone. */
  connection: Redis;
  /** Reconciliations of different sales run side by side; one sale never has two (one job id per sale). */
  concurrency: number;
  /** False to start it later with run() (the reconciler does, without waiting for Redis); default true. */
  autorun?: boolean;
  onReconciled?(result: ReconcileResult, reason: ReconcileJobData['reason']): void;
  /** Rests the worker while Redis refuses it; default one of its own. */
  backoff?: ErrorBackoff;
}

/**
 * The worker of the reconcile queue, the reconciler process's and the reconcile command's alike: each job
 * reconciles its sale. A sale MySQL does not hold fails the job for good (retrying cannot bring it back);
 * any other failure is retried by the queue, the sale kept paused meanwhile.
 */
export function createReconcileWorker(
  sales: Pick<Sales, 'reconcileSale'>,
  logger: Logger,
  {
    prefix,
    connection,
    concurrency,
    autorun = true,
    onReconciled,
    backoff = new ErrorBackoff(logger, 'reconcile'),
  }: ReconcileWorkerOptions,
): Worker<ReconcileJobData, ReconcileResult> {
  const worker = new Worker<ReconcileJobData, ReconcileResult>(
    RECONCILE_QUEUE,
    async (job) => {
      try {
        const result = await sales.reconcileSale(job.data.saleId, job.data.reason);
        onReconciled?.(result, job.data.reason);
        return result;
      } catch (error) {
        if (error instanceof SaleNotFound) throw new UnrecoverableError(error.message);
        throw error;
      }
    },
    { connection, prefix: bullPrefix(prefix), concurrency, autorun },
  );
  // BullMQ emits Redis trouble as 'error' events (unheard, an EventEmitter error ends the process), and
  // asks again at once: the worker rests instead, logged once per interval (error-backoff.ts).
  worker.on('error', (error) => backoff.failed(worker, error));
  worker.on('closing', () => backoff.stop());
  return worker;
}
