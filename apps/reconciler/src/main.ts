import { loadConfig, parseCommandLine } from '@flashsale/config';
import { createLogger, onShutdownSignal, readinessProbe, serveMetricsPort } from '@flashsale/runtime';
import { createRedis, readRedisMemory, redisTargetOf, refuseEvictingRedis } from '@flashsale/redis-store';
import { checkConnectionBudget, createPrisma } from '@flashsale/order-store';
import { bullConnection, createReconcileJobs } from '@flashsale/jobs';
import { Reconciler } from './reconciler.ts';
import { createReconcilerMetrics } from './metrics.ts';

parseCommandLine({
  usage: `usage: npm run reconciler

The reconciler: watches every live sale's Redis state against MySQL, reconciles a sale whose state was
lost or went back (pause, drain, rebuild, resume), audits the ledger; in the foreground until SIGTERM.
No options: configured by the environment only (REDIS_URL, DATABASE_URL, RECONCILER_PORT, ...;
docs/operations.md, "Configuration"). One sale now, by hand: npm run reconcile -- --sale <id>.`,
});
const config = loadConfig();
const logger = createLogger('reconciler', config.LOG_LEVEL);
const metrics = createReconcilerMetrics(() => readRedisMemory(redis));
const onRedisError = (err: Error) => {
  metrics.storeErrors.redis.inc();
  logger.warn({ err }, 'redis connection error');
};
const redis = createRedis(redisTargetOf(config), { name: 'reconciler', commandTimeoutMs: config.REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, onError: onRedisError, maxRetriesPerRequest: null });
const prisma = createPrisma(config.DATABASE_URL, config.RECONCILER_DB_POOL_SIZE, 0, { idleTimeoutMs: config.DB_POOL_IDLE_TIMEOUT_MS });
// In the background, never holding up the start: a MySQL that is down now is checked when it answers.
void checkConnectionBudget(config, 'reconciler', logger);
const jobs = createReconcileJobs(redisTargetOf(config), config.REDIS_PREFIX);

const reconciler = new Reconciler(
  {
    redis,
    prisma,
    jobs,
    bullConnection: () => bullConnection(redisTargetOf(config)),
    logger,
    onAudit: (report) => metrics.saleAudited(report.saleId, report.confirmed ? report.drift : 0),
    onReconciled: (result, reason) => metrics.reconciled(result, reason),
    onSaleError: () => metrics.saleErrors.inc(),
    onSaleSeen: (saleId, snapshot) => metrics.saleSeen(saleId, snapshot),
    onDoorSeen: (saleId, door) => metrics.doorSeen(saleId, door),
    onSaleGone: (saleId) => metrics.saleGone(saleId),
    onFailure: (error) => metrics.storeErrors.count(error),
    onReconcileFailed: (error) => metrics.reconcileFailed(error),
  },
  {
    prefix: config.REDIS_PREFIX,
    databaseUrl: config.DATABASE_URL,
    watchEveryMs: config.RECONCILER_WATCH_MS,
    publishGraceMs: config.RECONCILER_PUBLISH_GRACE_MS,
    createGraceMs: config.RECONCILER_CREATE_GRACE_MS,
    streamRetentionMs: config.RECONCILER_STREAM_RETENTION_MS,
    streamRetentionEntries: config.RECONCILER_STREAM_RETENTION_ENTRIES,
    watchAfterEndMs: config.RECONCILER_WATCH_AFTER_END_MS,
    retireAfterEndMs: config.RECONCILER_RETIRE_AFTER_END_MS,
    auditEveryMs: config.AUDIT_EVERY_MS,
    drainTimeoutMs: config.RECONCILE_DRAIN_TIMEOUT_MS,
    concurrency: config.RECONCILER_CONCURRENCY,
    watchPerSecond: config.RECONCILER_WATCH_PER_SECOND,
    auditPerSecond: config.RECONCILER_AUDIT_PER_SECOND,
    auditIdleMs: config.RECONCILER_AUDIT_IDLE_MS,
  },
);
// Served first, before anything waits for Redis or MySQL: /healthz answers while either is away, /readyz
// says so. Reconciling matters more than being scraped: a port already taken is logged, and the
// reconciler goes on without it.
const readiness = readinessProbe({ redis: () => redis.ping(), mysql: () => prisma.$queryRaw`SELECT 1` });
const { server, port } = await serveMetricsPort(metrics.registry, config.RECONCILER_PORT, { logger, role: 'reconciler', variable: 'RECONCILER_PORT', config, readiness });

onShutdownSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  if (port !== undefined) server.close();
  const stopped = reconciler.stop();
  if (redis.status === 'ready') {
    await stopped;
    await jobs.close();
    await redis.quit();
  } else {
    // Redis is away: the watch pass in hand waits on commands queued for its return (each up to
    // REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, BullMQ's with no deadline at all), and no reconciliation can
    // go on without it. A reconciliation cut here is BullMQ's stalled job, taken up again by the next
    // reconciler, the sale paused meanwhile: the same as a crash.
    logger.warn('Redis is away: stopping without waiting for the passes in hand');
    redis.disconnect();
  }
  await prisma.$disconnect();
});
reconciler.start();
logger.info({ port, prefix: config.REDIS_PREFIX }, 'reconciler started');
// In the background, once Redis answers: an evicting maxmemory-policy stops the process (redis-memory.ts).
void refuseEvictingRedis(redis, logger);
