import type { Redis } from 'ioredis';
import type { Logger } from '@flashsale/runtime';
import type { Sales } from '@flashsale/sales';
import { WatchLoop, type WatchLoopDeps } from './watch-loop.ts';
import { AuditSchedule, type AuditScheduleDeps } from './audit-schedule.ts';
import { JobWorkers, type JobWorkersDeps } from './job-workers.ts';

export interface ReconcilerOptions {
  /** REDIS_PREFIX: BullMQ's keys are under it too. */
  prefix: string;
  watchEveryMs: number;
  /** Sales younger than this are not judged yet (their publish may be under way). */
  publishGraceMs: number;
  /** Creates unfinished this long are abandoned (RECONCILER_CREATE_GRACE_MS). */
  createGraceMs: number;
  /** How long acknowledged entries stay in a sale's stream (RECONCILER_STREAM_RETENTION_MS). */
  streamRetentionMs: number;
  /** The most entries a stream keeps for that long (RECONCILER_STREAM_RETENTION_ENTRIES). */
  streamRetentionEntries: number;
  /** How long after its end a sale is still watched and audited (RECONCILER_WATCH_AFTER_END_MS). */
  watchAfterEndMs: number;
  /** How long after its end a drained sale stays in the workers' list (RECONCILER_RETIRE_AFTER_END_MS). */
  retireAfterEndMs: number;
  auditEveryMs: number;
  /** Reconciliations of different sales run side by side; one sale never has two (one job id per sale). */
  concurrency: number;
  /** The most sales watched per second (RECONCILER_WATCH_PER_SECOND; see WatchRota). */
  watchPerSecond: number;
  /** The longest one step of the watch may take before it is passed over (RECONCILER_WATCH_STEP_TIMEOUT_MS; see withinDeadline). */
  watchStepTimeoutMs: number;
  /** The most sales one audit run checks per second of auditEveryMs (RECONCILER_AUDIT_PER_SECOND). */
  auditPerSecond: number;
  /** A sale unchanged since its last clean audit is audited again after this long (RECONCILER_AUDIT_IDLE_MS). */
  auditIdleMs: number;
}

/** The use cases, BullMQ's connections, and what the process is told (its metrics: see each room's). */
export interface ReconcilerDeps
  extends
    Pick<WatchLoopDeps, 'onSaleError' | 'onSaleSeen' | 'onDoorSeen' | 'onSaleGone' | 'onWatchOverdue' | 'onFailure'>,
    Pick<JobWorkersDeps, 'onReconciled' | 'onReconcileFailed'>,
    Pick<AuditScheduleDeps, 'onAudit'> {
  /** The use cases (packages/sales), with the reconcile queue. */
  sales: Sales;
  /** Connections for BullMQ's workers and the audit queue (BullMQ needs maxRetriesPerRequest: null). */
  bullConnection: () => Redis;
  logger: Logger;
}

/**
 * The reconciler process's work, in three rooms: the watch loop that notices lost or stale Redis state
 * and queues reconciliations (watch-loop.ts), the audit's schedule and runs (audit-schedule.ts), and the
 * BullMQ workers that run the reconciliations and the audit (job-workers.ts). This only puts them
 * together, starts and stops them.
 */
export class Reconciler {
  private readonly connections: Redis[] = [];
  private readonly watch: WatchLoop;
  private readonly audits: AuditSchedule;
  private readonly workers: JobWorkers;

  constructor(deps: ReconcilerDeps, options: ReconcilerOptions) {
    const { sales, logger } = deps;
    const connection = () => {
      const c = deps.bullConnection();
      this.connections.push(c);
      return c;
    };
    this.audits = new AuditSchedule(
      {
        sales,
        logger,
        connection: connection(),
        watched: { listedSaleIds: () => this.watch.listedSaleIds(), fingerprintOf: (saleId) => this.watch.fingerprintOf(saleId) },
        onAudit: deps.onAudit,
        onSaleError: deps.onSaleError,
      },
      options,
    );
    this.watch = new WatchLoop(
      { ...deps, scheduleAudit: () => this.audits.schedule(), onListed: (saleIds) => this.audits.keepOnly(saleIds) },
      {
        publishGraceMs: options.publishGraceMs,
        createGraceMs: options.createGraceMs,
        retentionMs: options.streamRetentionMs,
        retentionEntries: options.streamRetentionEntries,
        watchAfterEndMs: options.watchAfterEndMs,
        retireAfterEndMs: options.retireAfterEndMs,
        watchEveryMs: options.watchEveryMs,
        watchPerSecond: options.watchPerSecond,
        watchStepTimeoutMs: options.watchStepTimeoutMs,
      },
    );
    this.workers = new JobWorkers({ ...deps, connection, audit: () => this.audits.run() }, options);
  }

  /**
   * Starts the loops and returns: none of them waits here for Redis or MySQL, so a reconciler started
   * while either is away serves its health port at once, and takes up its work when they answer.
   */
  start(): void {
    void this.audits.scheduleUntilSet();
    this.workers.run();
    this.watch.start();
  }

  async stop(): Promise<void> {
    await this.watch.stop();
    // The workers' close waits for the jobs in hand: a reconciliation is not cut between its rebuild and resume.
    await Promise.all([this.workers.close(), this.audits.close()]);
    for (const c of this.connections) c.disconnect();
  }
}
