import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '@flashsale/config';
import {
  AUDIT_QUEUE,
  bullPrefix,
  enqueueReconcile,
  reconcileUnfinished,
  type ReconcileJobData,
  type ReconcileResult,
  type ReconcileJobs,
} from '@flashsale/jobs';
import { isMysqlUnavailable, listWatchedSales, type PrismaClient } from '@flashsale/order-store';
import { announceSaleChanged, isRedisUnavailable, snapshotSale, type ScriptedRedis } from '@flashsale/redis-store';
import { createReconcileWorker } from './reconcile-worker.ts';
import { watchOnce } from './state-watcher.ts';
import { auditAndReport, type AuditReport } from './ledger-audit.ts';

export interface ReconcilerOptions {
  prefix: string;
  databaseUrl: string;
  watchEveryMs: number;
  /** Sales younger than this are not judged yet (their publish may be under way). */
  publishGraceMs: number;
  /** Creates unfinished this long are abandoned (RECONCILER_CREATE_GRACE_MS). */
  createGraceMs: number;
  /** How long acknowledged entries stay in a sale's stream (RECONCILER_STREAM_RETENTION_MS). */
  streamRetentionMs: number;
  /** How long after its end a sale is still watched and audited (RECONCILER_WATCH_AFTER_END_MS). */
  watchAfterEndMs: number;
  /** How long after its end a drained sale stays in the workers' list (RECONCILER_RETIRE_AFTER_END_MS). */
  retireAfterEndMs: number;
  auditEveryMs: number;
  drainTimeoutMs: number;
  /** Reconciliations of different sales run side by side; one sale never has two (one job id per sale). */
  concurrency: number;
}

export interface ReconcilerDeps {
  redis: ScriptedRedis;
  prisma: PrismaClient;
  jobs: ReconcileJobs;
  /** Connections for BullMQ's workers and the audit queue (BullMQ needs maxRetriesPerRequest: null). */
  bullConnection: () => Redis;
  logger: Logger;
  onAudit(report: AuditReport & { confirmed: boolean }): void;
  onReconciled(result: ReconcileResult): void;
  /** A sale whose watch or audit failed on its own (the others went on). */
  onSaleError(saleId: number, error: unknown): void;
}

const AUDIT_SCHEDULER = 'audit-every-live-sale';

/**
 * The reconciler process: a BullMQ worker that runs reconciliations, one that runs the scheduled audit,
 * and the watch loop that notices lost or stale Redis state and queues reconciliations.
 */
export class Reconciler {
  private readonly connections: Redis[] = [];
  private readonly reconcileWorker: Worker<ReconcileJobData, ReconcileResult>;
  private readonly auditWorker: Worker;
  private readonly auditQueue: Queue;
  private watchTimer: NodeJS.Timeout | undefined;
  private watching: Promise<void> = Promise.resolve();
  private ticks = 0;
  private watchInProgress = false;
  private readonly pausedLastPass = new Set<number>();

  constructor(
    private readonly deps: ReconcilerDeps,
    private readonly options: ReconcilerOptions,
  ) {
    const { redis, prisma, logger } = deps;
    const prefix = bullPrefix(options.prefix);
    const connection = () => {
      const c = deps.bullConnection();
      this.connections.push(c);
      return c;
    };
    const reconcileDeps = {
      redis,
      prisma,
      databaseUrl: options.databaseUrl,
      prefix: options.prefix,
      logger,
      drainTimeoutMs: options.drainTimeoutMs,
      announce: (saleId: number) => announceSaleChanged(redis, options.prefix, saleId),
    };
    this.reconcileWorker = createReconcileWorker(reconcileDeps, {
      connection: connection(),
      concurrency: options.concurrency,
      autorun: false,
      onReconciled: deps.onReconciled,
    });
    this.reconcileWorker.on('failed', (job, error) => {
      logger.error({ err: error, saleId: job?.data.saleId, attempt: job?.attemptsMade }, 'reconcile attempt failed; BullMQ retries it');
    });
    this.auditQueue = new Queue(AUDIT_QUEUE, { connection: connection(), prefix });
    // BullMQ emits connection trouble as 'error' events; unheard, an EventEmitter error ends the process.
    const onBullError = (error: Error) => logger.warn({ err: error }, 'bullmq connection error');
    this.auditQueue.on('error', onBullError);
    this.auditWorker = new Worker(
      AUDIT_QUEUE,
      async () => {
        const auditDeps = { redis, prisma, prefix: options.prefix, logger, onReport: deps.onAudit };
        for (const sale of await listWatchedSales(prisma, { watchAfterEndMs: options.watchAfterEndMs })) {
          // One sale whose keys cannot be read (the wrong type) must not keep the others from their audit.
          await auditAndReport(auditDeps, sale.id).catch((error: unknown) => {
            if (isRedisUnavailable(error) || isMysqlUnavailable(error)) throw error;
            deps.onSaleError(sale.id, error);
            logger.error({ err: error, saleId: sale.id }, 'sale not audited: its state could not be read');
          });
        }
      },
      { connection: connection(), prefix, concurrency: 1, autorun: false },
    );
    this.auditWorker.on('error', onBullError);
  }

  /**
   * Starts the loops and returns: none of them waits here for Redis or MySQL, so a reconciler started
   * while either is away serves its health port at once, and takes up its work when they answer.
   */
  start(): void {
    void this.scheduleAuditUntilSet();
    void this.reconcileWorker.run();
    void this.auditWorker.run();
    this.watchTimer = setInterval(() => {
      // One pass at a time: while a pass hangs (Redis or MySQL away) the ticks are skipped, not queued.
      if (this.watchInProgress) return;
      this.watchInProgress = true;
      this.watching = this.watch().finally(() => {
        this.watchInProgress = false;
      });
    }, this.options.watchEveryMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.watchTimer);
    await this.watching;
    // close() waits for the jobs in hand: a reconciliation is not cut between its rebuild and resume.
    await Promise.all([this.reconcileWorker.close(), this.auditWorker.close(), this.auditQueue.close()]);
    for (const c of this.connections) c.disconnect();
  }

  private async watch(): Promise<void> {
    try {
      // The audit's schedule lives in Redis; a Redis that lost its data lost it too, so it is set again
      // now and then (upserting an existing scheduler changes nothing).
      if (++this.ticks % 10 === 0) await this.scheduleAudit();
      await watchOnce({
        redis: this.deps.redis,
        prisma: this.deps.prisma,
        prefix: this.options.prefix,
        logger: this.deps.logger,
        publishGraceMs: this.options.publishGraceMs,
        createGraceMs: this.options.createGraceMs,
        retentionMs: this.options.streamRetentionMs,
        watchAfterEndMs: this.options.watchAfterEndMs,
        retireAfterEndMs: this.options.retireAfterEndMs,
        pausedLastPass: this.pausedLastPass,
        onSaleError: this.deps.onSaleError,
        requestReconcile: async (saleId, reason) => {
          if (reason === 'interrupted') {
            // Paused with no reconciliation in the queue: but one may have resumed the sale and finished
            // since the watcher looked. Only a sale still paused now, with no job, is taken up.
            if (await reconcileUnfinished(this.deps.jobs.queue, saleId)) return;
            if (!(await snapshotSale(this.deps.redis, this.options.prefix, saleId)).paused) return;
          }
          await enqueueReconcile(this.deps.jobs.queue, saleId, reason);
        },
      });
    } catch (error) {
      this.deps.logger.error({ err: error }, 'watch pass failed; next pass retries');
    }
  }

  /**
   * The audit's schedule lives in Redis, which may be away at start: BullMQ's command then waits for it
   * to come back. One that fails is retried every second until the schedule is set or the reconciler
   * stops.
   */
  private async scheduleAuditUntilSet(): Promise<void> {
    for (;;) {
      try {
        await this.scheduleAudit();
        return;
      } catch (error) {
        if (this.auditQueue.closing) return;
        this.deps.logger.warn({ err: error }, 'audit not scheduled yet; retrying in 1 s');
        await sleep(1000);
      }
    }
  }

  private async scheduleAudit(): Promise<void> {
    await this.auditQueue.upsertJobScheduler(AUDIT_SCHEDULER, { every: this.options.auditEveryMs }, {
      name: 'audit',
      opts: { removeOnComplete: 100, removeOnFail: 100 },
    });
  }
}
