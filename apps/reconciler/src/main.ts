import { announceStarted, bootProcess, bullConnectionOf, openStores, serveStoresPort, stopOnSignal } from '@flashsale/bootstrap';
import { Reconciler } from './reconciler.ts';
import { createReconcilerMetrics } from './metrics.ts';

const proc = bootProcess(
  'reconciler',
  `usage: npm run reconciler

The reconciler: watches every live sale's Redis state against MySQL, reconciles a sale whose state was
lost or went back (pause, drain, rebuild, resume), audits the ledger; in the foreground until SIGTERM.
No options: configured by the environment only (REDIS_URL, DATABASE_URL, RECONCILER_PORT, ...;
docs/configuration.md). One sale now, by hand: npm run reconcile -- --sale <id>.`,
);
const { config, logger } = proc;
const metrics = createReconcilerMetrics(() => stores.sales.redisMemory());
const stores = openStores(proc, metrics.storeErrors);

const reconciler = new Reconciler(
  {
    sales: stores.sales,
    bullConnection: () => bullConnectionOf(config),
    logger,
    onAudit: (report) => metrics.saleAudited(report.saleId, report.confirmed ? report.drift : 0),
    onReconciled: (result, reason) => metrics.reconciled(result, reason),
    onSaleError: () => metrics.saleErrors.inc(),
    onSaleSeen: (saleId, snapshot) => metrics.saleSeen(saleId, snapshot),
    onDoorSeen: (saleId, door) => metrics.doorSeen(saleId, door),
    onSaleGone: (saleId) => metrics.saleGone(saleId),
    onWatchOverdue: (step) => metrics.watchOverdue.inc({ step }),
    onFailure: (error) => metrics.storeErrors.count(error),
    onReconcileFailed: (error) => metrics.reconcileFailed(error),
  },
  {
    prefix: config.REDIS_PREFIX,
    watchEveryMs: config.RECONCILER_WATCH_MS,
    publishGraceMs: config.RECONCILER_PUBLISH_GRACE_MS,
    createGraceMs: config.RECONCILER_CREATE_GRACE_MS,
    streamRetentionMs: config.RECONCILER_STREAM_RETENTION_MS,
    streamRetentionEntries: config.RECONCILER_STREAM_RETENTION_ENTRIES,
    watchAfterEndMs: config.RECONCILER_WATCH_AFTER_END_MS,
    retireAfterEndMs: config.RECONCILER_RETIRE_AFTER_END_MS,
    auditEveryMs: config.AUDIT_EVERY_MS,
    concurrency: config.RECONCILER_CONCURRENCY,
    watchPerSecond: config.RECONCILER_WATCH_PER_SECOND,
    watchStepTimeoutMs: config.RECONCILER_WATCH_STEP_TIMEOUT_MS,
    auditPerSecond: config.RECONCILER_AUDIT_PER_SECOND,
    auditIdleMs: config.RECONCILER_AUDIT_IDLE_MS,
  },
);
const internalPort = await serveStoresPort(proc, metrics.registry, stores);

stopOnSignal(proc, stores, {
  work: () => reconciler.stop(),
  // A reconciliation cut here is BullMQ's stalled job, taken up again by the next reconciler, the sale
  // paused meanwhile: the same as a crash.
  onRedisAway: () => logger.warn('Redis is away: stopping without waiting for the passes in hand'),
  internalPort,
});
reconciler.start();
announceStarted(proc, stores.redis, { port: internalPort.port, prefix: config.REDIS_PREFIX }, 'reconciler started');
