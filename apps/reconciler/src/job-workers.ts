import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '@flashsale/runtime';
import { AUDIT_QUEUE, bullPrefix, type ReconcileJobData, type ReconcileResult, type Sales } from '@flashsale/sales';
import { createReconcileWorker } from './reconcile-worker.ts';
import { ErrorBackoff } from './error-backoff.ts';

export interface JobWorkersDeps {
  sales: Pick<Sales, 'reconcileSale'>;
  logger: Logger;
  /** A connection of its own for each worker (BullMQ's: maxRetriesPerRequest null). */
  connection: () => Redis;
  /** One run of the audit (audit-schedule.ts). */
  audit: () => Promise<void>;
  onReconciled(result: ReconcileResult, reason: ReconcileJobData['reason']): void;
  /** An audit run or a reconcile attempt failed as a whole (Redis or MySQL away, mostly). */
  onFailure?(error: unknown): void;
  /** A reconcile attempt failed (BullMQ retries it; the sale stays paused meanwhile). */
  onReconcileFailed?(error: unknown): void;
}

export interface JobWorkersOptions {
  /** REDIS_PREFIX: the queues' keys are under it. */
  prefix: string;
  /** Reconciliations of different sales run side by side; one sale never has two (one job id per sale). */
  concurrency: number;
}

/**
 * The reconciler's BullMQ workers: the reconcile queue's (each job reconciles its sale: reconcile-worker.ts)
 * and the audit queue's (each job is one run of the audit). Created stopped: run() starts them without
 * waiting for Redis; close() waits for the jobs in hand, so a reconciliation is not cut between its
 * rebuild and its resume.
 */
export class JobWorkers {
  private readonly reconcile: Worker<ReconcileJobData, ReconcileResult>;
  private readonly audit: Worker;

  constructor(deps: JobWorkersDeps, options: JobWorkersOptions) {
    const { logger } = deps;
    this.reconcile = createReconcileWorker(deps.sales, logger, {
      prefix: options.prefix,
      connection: deps.connection(),
      concurrency: options.concurrency,
      autorun: false,
      onReconciled: deps.onReconciled,
    });
    this.reconcile.on('failed', (job, error) => {
      deps.onFailure?.(error);
      deps.onReconcileFailed?.(error);
      logger.error({ err: error, saleId: job?.data.saleId, attempt: job?.attemptsMade }, 'reconcile attempt failed; BullMQ retries it');
    });
    this.audit = new Worker(AUDIT_QUEUE, () => deps.audit(), {
      connection: deps.connection(),
      prefix: bullPrefix(options.prefix),
      concurrency: 1,
      autorun: false,
    });
    const auditErrors = new ErrorBackoff(logger, 'audit');
    this.audit.on('error', (error) => auditErrors.failed(this.audit, error));
    this.audit.on('closing', () => auditErrors.stop());
    this.audit.on('failed', (_job, error) => {
      deps.onFailure?.(error);
      logger.error({ err: error }, 'audit run failed; the next run audits again');
    });
  }

  run(): void {
    void this.reconcile.run();
    void this.audit.run();
  }

  async close(): Promise<void> {
    await Promise.all([this.reconcile.close(), this.audit.close()]);
  }
}
