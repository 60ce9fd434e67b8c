import { createLogger } from '@flashsale/runtime';
import { salesOptionsOf } from '@flashsale/bootstrap';
import { bullConnection, createReconcileJobs, type ReconcileResult } from '@flashsale/jobs';
import { Reconciler } from '../../apps/reconciler/src/reconciler.ts';
import { createSales, type AuditReport } from '@flashsale/sales';
import { salesDeps, type ReconcileDeps } from '@flashsale/sales/testing';
import type { TestContext } from './context.ts';

/** What reconcileSale needs, from a test context. */
export function reconcileDeps(ctx: TestContext, drainTimeoutMs = 10_000): ReconcileDeps {
  return {
    ...salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('reconcile-test', 'silent') }),
    databaseUrl: ctx.config.DATABASE_URL,
    drainTimeoutMs,
    announce: (saleId) => ctx.store.sale(saleId).announceChanged(),
  };
}

/** A whole reconciler (watch loop, BullMQ workers, audit schedule) in this process, on the context's prefix. */
export async function startReconciler(
  ctx: TestContext,
  options: {
    watchEveryMs?: number;
    auditEveryMs?: number;
    drainTimeoutMs?: number;
    publishGraceMs?: number;
    streamRetentionMs?: number;
    auditIdleMs?: number;
  } = {},
) {
  const jobs = createReconcileJobs(ctx.config.REDIS_URL, ctx.config.REDIS_PREFIX);
  const audits: (AuditReport & { confirmed: boolean })[] = [];
  const reconciled: ReconcileResult[] = [];
  const saleErrors: { saleId: number; error: unknown }[] = [];
  const logger = createLogger('reconciler-test', 'silent');
  const salesOptions = { ...salesOptionsOf(ctx.config), drainTimeoutMs: options.drainTimeoutMs ?? 10_000 };
  const sales = createSales({ saleStore: ctx.store, prisma: ctx.prisma, logger, options: salesOptions, jobs });
  const reconciler = new Reconciler(
    {
      sales,
      bullConnection: () => bullConnection(ctx.config.REDIS_URL),
      logger,
      onAudit: (report) => audits.push(report),
      onReconciled: (result) => reconciled.push(result),
      onSaleError: (saleId, error) => saleErrors.push({ saleId, error }),
    },
    {
      prefix: ctx.config.REDIS_PREFIX,
      watchEveryMs: options.watchEveryMs ?? 100,
      publishGraceMs: options.publishGraceMs ?? 0,
      createGraceMs: 30_000,
      streamRetentionMs: options.streamRetentionMs ?? 60_000,
      streamRetentionEntries: ctx.config.RECONCILER_STREAM_RETENTION_ENTRIES,
      watchAfterEndMs: ctx.config.RECONCILER_WATCH_AFTER_END_MS,
      retireAfterEndMs: ctx.config.RECONCILER_RETIRE_AFTER_END_MS,
      auditEveryMs: options.auditEveryMs ?? 200,
      concurrency: 2,
      watchPerSecond: ctx.config.RECONCILER_WATCH_PER_SECOND,
      watchStepTimeoutMs: ctx.config.RECONCILER_WATCH_STEP_TIMEOUT_MS,
      auditPerSecond: ctx.config.RECONCILER_AUDIT_PER_SECOND,
      auditIdleMs: options.auditIdleMs ?? ctx.config.RECONCILER_AUDIT_IDLE_MS,
    },
  );
  reconciler.start();
  return {
    jobs,
    audits,
    reconciled,
    saleErrors,
    async stop() {
      await reconciler.stop();
      await jobs.close();
    },
  };
}
