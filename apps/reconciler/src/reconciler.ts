import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '@flashsale/runtime';
import { createReconcileWorker } from './reconcile-worker.ts';
import {
  AUDIT_QUEUE,
  bullPrefix,
  isStoreUnavailable,
  WatchStepOverdueError,
  withinDeadline,
  type AuditReport,
  type DoorGauges,
  type ReconcileJobData,
  type ReconcileResult,
  type Sales,
  type SaleSnapshot,
  type SaleVisit,
  type WatchedSale,
} from '@flashsale/sales';
import { WatchRota } from './watch-rota.ts';
import { ErrorBackoff, type Restable } from './error-backoff.ts';

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

export interface ReconcilerDeps {
  /** The use cases (packages/sales), with the reconcile queue. */
  sales: Sales;
  /** Connections for BullMQ's workers and the audit queue (BullMQ needs maxRetriesPerRequest: null). */
  bullConnection: () => Redis;
  logger: Logger;
  onAudit(report: AuditReport & { confirmed: boolean }): void;
  onReconciled(result: ReconcileResult, reason: ReconcileJobData['reason']): void;
  /** A sale whose watch or audit failed on its own (the others went on). */
  onSaleError(saleId: number, error: unknown): void;
  /** A look at a live sale: what Redis showed (the per-sale gauges). */
  onSaleSeen?(saleId: number, snapshot: SaleSnapshot): void;
  /** A look at a live queued sale's door (read at the look's time, never moved: readDoorGauges). */
  onDoorSeen?(saleId: number, door: DoorGauges): void;
  /** A sale retired (see isRetired) or no longer watched: nothing more is told of it until seen live again. */
  onSaleGone?(saleId: number): void;
  /** A step of the watch passed over for not finishing within its deadline (also logged, with the sale). */
  onWatchOverdue?(step: WatchStep): void;
  /** A watch pass, an audit run or a reconcile attempt failed as a whole (Redis or MySQL away, mostly). */
  onFailure?(error: unknown): void;
  /** A reconcile attempt failed (BullMQ retries it; the sale stays paused meanwhile). */
  onReconcileFailed?(error: unknown): void;
}

const AUDIT_SCHEDULER = 'audit-every-live-sale';

/** The steps of the watch, each under RECONCILER_WATCH_STEP_TIMEOUT_MS (the metric's `step` label). */
export type WatchStep = 'list' | 'look' | 'door' | 'retire' | 'mysql_identity' | 'audit_schedule';

/** A queue has no loop of its own to rest: its errors are only summed up in the log. */
const NOT_RESTABLE: Restable = { pause: async () => undefined, resume: () => undefined };

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
  private watchInProgress = false;
  private readonly pausedLastPass = new Set<number>();
  private readonly rota: WatchRota;
  private readonly saleWatch: ReturnType<Sales['saleWatch']>;
  /** When the list of sales was last read, and the audit's schedule last set (monotonic ms). */
  private listedAt = -Infinity;
  private scheduledAt = -Infinity;
  /** The watch's failures (every tick while Redis or MySQL is away), summed up in one log line per interval. */
  private readonly watchErrors: ErrorBackoff;
  /** What each sale's last look saw (its fingerprint), and what its last audit by this process saw. */
  private readonly observed = new Map<number, string>();
  private readonly audited = new Map<number, { fingerprint: string | undefined; at: number; clean: boolean }>();
  /** Sales whose last look found their Redis server refusing writes for memory: said once when the first is seen, once when the last is not. */
  private readonly outOfMemory = new Set<number>();

  constructor(
    private readonly deps: ReconcilerDeps,
    private readonly options: ReconcilerOptions,
  ) {
    const { sales, logger } = deps;
    this.watchErrors = new ErrorBackoff(logger, 'watch');
    const prefix = bullPrefix(options.prefix);
    const connection = () => {
      const c = deps.bullConnection();
      this.connections.push(c);
      return c;
    };
    this.rota = new WatchRota({ everyMs: options.watchEveryMs, perSecond: options.watchPerSecond });
    this.saleWatch = sales.saleWatch({
      publishGraceMs: options.publishGraceMs,
      createGraceMs: options.createGraceMs,
      retentionMs: options.streamRetentionMs,
      retentionEntries: options.streamRetentionEntries,
      watchAfterEndMs: options.watchAfterEndMs,
      retireAfterEndMs: options.retireAfterEndMs,
      pausedLastPass: this.pausedLastPass,
      onSaleError: deps.onSaleError,
    });
    this.reconcileWorker = createReconcileWorker(sales, logger, {
      prefix: options.prefix,
      connection: connection(),
      concurrency: options.concurrency,
      autorun: false,
      onReconciled: deps.onReconciled,
    });
    this.reconcileWorker.on('failed', (job, error) => {
      deps.onFailure?.(error);
      deps.onReconcileFailed?.(error);
      logger.error({ err: error, saleId: job?.data.saleId, attempt: job?.attemptsMade }, 'reconcile attempt failed; BullMQ retries it');
    });
    this.auditQueue = new Queue(AUDIT_QUEUE, { connection: connection(), prefix });
    // BullMQ emits connection trouble as 'error' events; unheard, an EventEmitter error ends the process.
    const queueErrors = new ErrorBackoff(logger, 'audit queue');
    this.auditQueue.on('error', (error) => queueErrors.failed(NOT_RESTABLE, error));
    this.auditWorker = new Worker(
      AUDIT_QUEUE,
      async () => {
        for (const saleId of await this.salesToAudit()) {
          const fingerprint = this.observed.get(saleId);
          // One sale whose keys cannot be read (the wrong type) must not keep the others from their audit.
          const report = await sales.auditAndReport(saleId, deps.onAudit).catch((error: unknown) => {
            if (isStoreUnavailable(error)) throw error;
            deps.onSaleError(saleId, error);
            logger.error({ err: error, saleId }, 'sale not audited: its state could not be read');
            return null;
          });
          this.audited.set(saleId, { fingerprint, at: performance.now(), clean: report !== null && report.drift === 0 && report.inFlightUnits === 0 });
          // Drift confirmed by a second look, either way, is a judgement to make, not only a line to log:
          // MySQL behind Redis (a restore, a replica promoted behind) or Redis behind MySQL (a stale
          // replica, split brain). The reconciliation restores what MySQL lost from Redis, then rebuilds
          // Redis from MySQL (packages/sales/src/sale-reconciliation.ts). Judged only with nothing in flight: while a worker
          // commits between the two stores' reads, a busy machine can show the same passing double count
          // twice in a row, and a reconciliation pauses the sale; a store that went back still shows its
          // drift once the sale is quiet.
          if (report && report.drift !== 0 && report.inFlightUnits === 0) await sales.queueReconciliation(saleId, 'drift');
        }
      },
      { connection: connection(), prefix, concurrency: 1, autorun: false },
    );
    const auditErrors = new ErrorBackoff(logger, 'audit');
    this.auditWorker.on('error', (error) => auditErrors.failed(this.auditWorker, error));
    this.auditWorker.on('closing', () => auditErrors.stop());
    this.auditWorker.on('failed', (_job, error) => {
      deps.onFailure?.(error);
      logger.error({ err: error }, 'audit run failed; the next run audits again');
    });
  }

  /**
   * Starts the loops and returns: none of them waits here for Redis or MySQL, so a reconciler started
   * while either is away serves its health port at once, and takes up its work when they answer.
   */
  start(): void {
    void this.scheduleAuditUntilSet();
    void this.reconcileWorker.run();
    void this.auditWorker.run();
    // Ticks of at most 100 ms: the rota spreads the looks over them at the rate (WatchRota).
    this.watchTimer = setInterval(() => {
      // One tick at a time: while one hangs (Redis or MySQL away) the others are skipped, not queued.
      if (this.watchInProgress) return;
      this.watchInProgress = true;
      this.watching = this.watch().finally(() => {
        this.watchInProgress = false;
      });
    }, Math.min(100, this.options.watchEveryMs));
  }

  async stop(): Promise<void> {
    clearInterval(this.watchTimer);
    await this.watching;
    // close() waits for the jobs in hand: a reconciliation is not cut between its rebuild and resume.
    await Promise.all([this.reconcileWorker.close(), this.auditWorker.close(), this.auditQueue.close()]);
    for (const c of this.connections) c.disconnect();
  }

  /**
   * One tick of the watch: once a round (WatchRota.roundMs), the list of sales is read again (and
   * unfinished creates settled, drained sales retired); then the sales due are looked at, within the rate.
   */
  /** The door's gauges of a queued sale: one MULTI of reads; its failure is this sale's alone. */
  private async lookAtDoor(saleId: number, at: number): Promise<void> {
    try {
      const door = await this.deps.sales.doorGauges(saleId, at);
      if (door) this.deps.onDoorSeen?.(saleId, door);
    } catch (error) {
      this.deps.onSaleError(saleId, error);
    }
  }

  private async watch(): Promise<void> {
    try {
      const now = performance.now();
      let listed: WatchedSale[] | undefined;
      if (now - this.listedAt >= this.rota.roundMs()) {
        listed = await this.step('list', undefined, () => this.saleWatch.listSales());
        this.rota.setSales(listed.filter((sale) => sale.settled), now);
        const ids = new Set(listed.map((sale) => sale.id));
        for (const saleId of this.observed.keys()) if (!ids.has(saleId)) this.deps.onSaleGone?.(saleId);
        for (const map of [this.observed, this.audited]) for (const saleId of map.keys()) if (!ids.has(saleId)) map.delete(saleId);
        for (const saleId of this.outOfMemory) if (!ids.has(saleId)) this.outOfMemory.delete(saleId);
        this.listedAt = now;
      }
      // The looks first: they read, and free (retention's XTRIM), both of which Redis allows when it is
      // out of memory. What writes (re-listing sales, the audit's schedule) comes after, and its failure
      // (OOM, mostly) fails that step alone, never the looks: a full Redis is emptied by this loop.
      for (const sale of this.rota.due(performance.now())) {
        let visit: SaleVisit | undefined;
        try {
          visit = await this.step('look', sale.id, (signal) => this.saleWatch.look(sale, signal));
        } catch (error) {
          if (!(error instanceof WatchStepOverdueError)) throw error;
          // Passed over (logged and counted): looked at again soon, as a sale that changed, while the
          // loop goes on to the others.
          this.rota.visited(sale, performance.now(), true);
          continue;
        }
        if (visit) {
          this.observed.set(sale.id, fingerprintOf(visit.snapshot));
          this.noteMemory(sale.id, visit.snapshot);
          if (this.isRetired(visit)) this.deps.onSaleGone?.(sale.id);
          else {
            this.deps.onSaleSeen?.(sale.id, visit.snapshot);
            if (sale.admission && visit.snapshot.present && this.deps.onDoorSeen) {
              const at = visit.snapshot.at;
              await this.step('door', sale.id, () => this.lookAtDoor(sale.id, at)).catch(passOverdue);
            }
          }
          this.rota.visited(visit.sale, performance.now(), visit.changed);
        } else {
          // Its own failure (logged and counted): looked at again in a whole round, not at every tick.
          this.rota.visited(sale, performance.now(), false);
        }
      }
      if (listed) await this.afterLooks('retire', () => this.saleWatch.retireFinished(listed));
      // Once a round, after the looks: MySQL's identity against the one Redis remembers (watchMysqlServer).
      if (listed) {
        const saleIds = listed.filter((sale) => sale.settled).map((sale) => sale.id);
        await this.afterLooks('mysql_identity', async () => void (await this.saleWatch.watchMysqlServer(saleIds)));
      }
      // The audit's schedule lives in Redis; a Redis that lost its data lost it too, so it is set again
      // now and then (upserting an existing scheduler changes nothing).
      if (now - this.scheduledAt >= 10_000 && this.listedAt !== -Infinity) {
        this.scheduledAt = now;
        await this.afterLooks('audit_schedule', () => this.scheduleAudit());
      }
    } catch (error) {
      this.watchFailed(error);
    }
  }

  /**
   * Says once that Redis refuses writes for memory (every purchase on it answers 503, and the sale's
   * public status says `paused`), and once that it takes them again: a condition, not one line a pass.
   */
  private noteMemory(saleId: number, { memory }: SaleSnapshot): void {
    const before = this.outOfMemory.size;
    if (memory.refusesWrites) this.outOfMemory.add(saleId);
    else this.outOfMemory.delete(saleId);
    if (before === 0 && this.outOfMemory.size > 0) {
      this.deps.logger.warn(
        { saleId, usedMemoryBytes: memory.countedBytes, maxmemoryBytes: memory.maxmemoryBytes },
        'Redis refuses writes (over maxmemory): purchases answer 503 until retention frees acknowledged stream entries; if the buyers alone fill it, raise maxmemory',
      );
    } else if (before > 0 && this.outOfMemory.size === 0) {
      this.deps.logger.info({ usedMemoryBytes: memory.countedBytes, maxmemoryBytes: memory.maxmemoryBytes }, 'Redis takes writes again (under maxmemory)');
    }
  }

  /** A step of the watch after its looks: its failure is summed up in the log, the pass goes on. */
  private async afterLooks(step: WatchStep, work: () => Promise<void>): Promise<void> {
    try {
      await this.step(step, undefined, work);
    } catch (error) {
      this.watchFailed(error);
    }
  }

  /** A failed pass or step: summed up in the log; an overdue one was already logged and counted. */
  private watchFailed(error: unknown): void {
    if (error instanceof WatchStepOverdueError) return;
    this.deps.onFailure?.(error);
    this.watchErrors.failed(NOT_RESTABLE, error as Error);
  }

  /**
   * One step of the watch within RECONCILER_WATCH_STEP_TIMEOUT_MS (withinDeadline): past it, the step
   * is logged (with its sale) and counted, and fails with WatchStepOverdueError, so no step can hold up
   * the loop, and with it every other sale's look, without a word.
   */
  private async step<T>(step: WatchStep, saleId: number | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const deadlineMs = this.options.watchStepTimeoutMs;
    try {
      return await withinDeadline(step, deadlineMs, work);
    } catch (error) {
      if (error instanceof WatchStepOverdueError) {
        this.deps.onWatchOverdue?.(step);
        this.deps.logger.warn({ step, saleId, deadlineMs }, 'watch step overdue: passed over, the watch goes on');
      }
      throw error;
    }
  }

  /**
   * Whether a look found the sale retired: ended retireAfterEndMs ago on Redis's clock and drained, the
   * rule retireFinishedSales takes it off the workers' list by. It is still watched (and audited) until
   * RECONCILER_WATCH_AFTER_END_MS, but no longer live for the metrics.
   */
  private isRetired({ sale, snapshot }: SaleVisit): boolean {
    const drained = snapshot.backlog === null || (snapshot.backlog.lag === 0 && snapshot.backlog.pending === 0);
    return drained && snapshot.at >= sale.endsAt + this.options.retireAfterEndMs;
  }

  /**
   * The sales one audit run checks: at most auditPerSecond x auditEveryMs / 1000 of them, those never
   * audited (by this process) or changed since their last audit first, then the longest unaudited. A sale
   * whose last look shows the same state as at its last audit, which balanced with nothing in flight, is
   * left alone until that audit is auditIdleMs old: an idle sale costs nothing between. Its state is the
   * watcher's last look (same process); until the watcher has listed the sales, MySQL's list.
   */
  private async salesToAudit(): Promise<number[]> {
    const sales = this.rota.size > 0 ? this.rota.saleIds() : await this.deps.sales.watchedSaleIds(this.options.watchAfterEndMs);
    const now = performance.now();
    const due = sales.filter((saleId) => {
      const last = this.audited.get(saleId);
      const seen = this.observed.get(saleId);
      return !(last && last.clean && seen !== undefined && last.fingerprint === seen && now - last.at < this.options.auditIdleMs);
    });
    const rank = (saleId: number) => {
      const last = this.audited.get(saleId);
      if (!last || last.fingerprint !== this.observed.get(saleId)) return -Infinity;
      return last.at;
    };
    due.sort((a, b) => rank(a) - rank(b));
    return due.slice(0, Math.max(1, Math.ceil((this.options.auditPerSecond * this.options.auditEveryMs) / 1000)));
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

/** Swallows a step's overdue failure (already logged and counted); anything else goes on. */
function passOverdue(error: unknown): void {
  if (!(error instanceof WatchStepOverdueError)) throw error;
}

/** What a look saw of a sale's state, as a string to compare: equal means nothing happened in between. */
function fingerprintOf(snapshot: SaleSnapshot): string {
  return [snapshot.present, snapshot.generation, snapshot.paused, snapshot.remaining, snapshot.buyers, snapshot.lastEntryId].join('|');
}
