import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '@flashsale/runtime';
import { AUDIT_QUEUE, bullPrefix, isStoreUnavailable, type AuditReport, type Sales } from '@flashsale/sales';
import { ErrorBackoff, NOT_RESTABLE } from './error-backoff.ts';

const AUDIT_SCHEDULER = 'audit-every-live-sale';

export interface AuditScheduleOptions {
  /** REDIS_PREFIX: the audit queue's keys are under it. */
  prefix: string;
  auditEveryMs: number;
  /** The most sales one audit run checks per second of auditEveryMs (RECONCILER_AUDIT_PER_SECOND). */
  auditPerSecond: number;
  /** A sale unchanged since its last clean audit is audited again after this long (RECONCILER_AUDIT_IDLE_MS). */
  auditIdleMs: number;
  /** How long after its end a sale is still audited (RECONCILER_WATCH_AFTER_END_MS). */
  watchAfterEndMs: number;
}

export interface AuditScheduleDeps {
  sales: Pick<Sales, 'auditAndReport' | 'queueReconciliation' | 'watchedSaleIds'>;
  logger: Logger;
  /** BullMQ's connection for the audit queue. */
  connection: Redis;
  /** What this process's watch saw: the sales its last round listed (null before), and each one's last look. */
  watched: { listedSaleIds(): number[] | null; fingerprintOf(saleId: number): string | undefined };
  onAudit(report: AuditReport & { confirmed: boolean }): void;
  /** A sale whose audit failed on its own (the others went on). */
  onSaleError(saleId: number, error: unknown): void;
}

/**
 * The audit: a BullMQ job scheduler (every AUDIT_EVERY_MS, kept in Redis, so set again now and then by the
 * watch: a Redis that lost its data lost it too), and what each run does, which the audit queue's worker
 * calls (job-workers.ts): balance the ledger of the sales due, and ask for a reconciliation of a drift
 * seen twice.
 */
export class AuditSchedule {
  private readonly queue: Queue;
  /** What each sale's last audit by this process saw. */
  private readonly audited = new Map<number, { fingerprint: string | undefined; at: number; clean: boolean }>();

  constructor(
    private readonly deps: AuditScheduleDeps,
    private readonly options: AuditScheduleOptions,
  ) {
    this.queue = new Queue(AUDIT_QUEUE, { connection: deps.connection, prefix: bullPrefix(options.prefix) });
    // BullMQ emits connection trouble as 'error' events; unheard, an EventEmitter error ends the process.
    const queueErrors = new ErrorBackoff(deps.logger, 'audit queue');
    this.queue.on('error', (error) => queueErrors.failed(NOT_RESTABLE, error));
  }

  /** One run of the audit: the sales due, each on its own. */
  async run(): Promise<void> {
    const { sales, logger } = this.deps;
    for (const saleId of await this.salesToAudit()) {
      const fingerprint = this.deps.watched.fingerprintOf(saleId);
      // One sale whose keys cannot be read (the wrong type) must not keep the others from their audit.
      const report = await sales.auditAndReport(saleId, this.deps.onAudit).catch((error: unknown) => {
        if (isStoreUnavailable(error)) throw error;
        this.deps.onSaleError(saleId, error);
        logger.error({ err: error, saleId }, 'sale not audited: its state could not be read');
        return null;
      });
      this.audited.set(saleId, {
        fingerprint,
        at: performance.now(),
        clean: report !== null && report.drift === 0 && report.inFlightUnits === 0,
      });
      // Drift confirmed by a second look, either way, is a judgement to make, not only a line to log:
      // MySQL behind Redis (a restore, a replica promoted behind) or Redis behind MySQL (a stale
      // replica, split brain). The reconciliation restores what MySQL lost from Redis, then rebuilds
      // Redis from MySQL (packages/sales/src/sale-reconciliation.ts). Judged only with nothing in flight: while a worker
      // commits between the two stores' reads, a busy machine can show the same passing double count
      // twice in a row, and a reconciliation pauses the sale; a store that went back still shows its
      // drift once the sale is quiet.
      if (report && report.drift !== 0 && report.inFlightUnits === 0) await sales.queueReconciliation(saleId, 'drift');
    }
  }

  /** The watch listed these sales: the audits of any other are forgotten. */
  keepOnly(saleIds: ReadonlySet<number>): void {
    for (const saleId of this.audited.keys()) if (!saleIds.has(saleId)) this.audited.delete(saleId);
  }

  /**
   * The audit's schedule lives in Redis, which may be away at start: BullMQ's command then waits for it
   * to come back. One that fails is retried every second until the schedule is set or the reconciler
   * stops.
   */
  async scheduleUntilSet(): Promise<void> {
    for (;;) {
      try {
        await this.schedule();
        return;
      } catch (error) {
        if (this.queue.closing) return;
        this.deps.logger.warn({ err: error }, 'audit not scheduled yet; retrying in 1 s');
        await sleep(1000);
      }
    }
  }

  /** Sets the schedule (upserting an existing scheduler changes nothing). */
  async schedule(): Promise<void> {
    await this.queue.upsertJobScheduler(
      AUDIT_SCHEDULER,
      { every: this.options.auditEveryMs },
      {
        name: 'audit',
        opts: { removeOnComplete: 100, removeOnFail: 100 },
      },
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }

  /**
   * The sales one audit run checks: at most auditPerSecond x auditEveryMs / 1000 of them, those never
   * audited (by this process) or changed since their last audit first, then the longest unaudited. A sale
   * whose last look shows the same state as at its last audit, which balanced with nothing in flight, is
   * left alone until that audit is auditIdleMs old: an idle sale costs nothing between. Its state is the
   * watcher's last look (same process); until the watcher has listed the sales, MySQL's list.
   */
  private async salesToAudit(): Promise<number[]> {
    const { watched } = this.deps;
    const sales = watched.listedSaleIds() ?? (await this.deps.sales.watchedSaleIds(this.options.watchAfterEndMs));
    const now = performance.now();
    const due = sales.filter((saleId) => {
      const last = this.audited.get(saleId);
      const seen = watched.fingerprintOf(saleId);
      return !(last && last.clean && seen !== undefined && last.fingerprint === seen && now - last.at < this.options.auditIdleMs);
    });
    const rank = (saleId: number) => {
      const last = this.audited.get(saleId);
      if (!last || last.fingerprint !== watched.fingerprintOf(saleId)) return -Infinity;
      return last.at;
    };
    due.sort((a, b) => rank(a) - rank(b));
    return due.slice(0, Math.max(1, Math.ceil((this.options.auditPerSecond * this.options.auditEveryMs) / 1000)));
  }
}
