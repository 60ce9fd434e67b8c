import type { StoreErrorMetrics } from '@flashsale/runtime';
import { readinessProbe, type Logger, type MetricsSource, type Readiness } from '@flashsale/runtime';
import { createRedis, redisTargetOf, type ScriptedRedis } from '@flashsale/redis-store';
import { createPrisma, type PrismaClient } from '@flashsale/order-store';
import { createReconcileJobs, type ReconcileJobs } from '@flashsale/jobs';
import type { Sales } from '@flashsale/sales';
import { serveInternalPort, type InternalPort, type ProcessBoot } from './process-boot.ts';
import { salesOf } from './process-sales.ts';

export interface WorkerStores {
  redis: ScriptedRedis;
  prisma: PrismaClient;
  /** The use cases over these connections (packages/sales): what the app calls. */
  sales: Sales;
}

export interface ReconcilerStores extends WorkerStores {
  /** The reconcile queue: the gateway's admin endpoint asks for a reconciliation; the reconciler runs it. */
  jobs: ReconcileJobs;
}

export interface GatewayStores extends ReconcilerStores {
  /** The dashboard's own MySQL pool: its reads never wait for, nor hold, a connection a buyer needs. */
  dashboardPrisma: PrismaClient;
  /** The use cases over the dashboard's pool: its live views read through it alone. */
  dashboardSales: Sales;
}

/** What any process holds of the stores, closed when it stops. */
export type ProcessStores = WorkerStores & Partial<GatewayStores>;

/**
 * The connections of a process, opened as its role needs them; none waits for its store to answer, so
 * a process starts while Redis or MySQL is away. Redis's connection errors are counted
 * (`flashsale_redis_errors_total`) and logged; ioredis reconnects by itself.
 */
export function openStores(proc: ProcessBoot<'gateway'>, storeErrors: Pick<StoreErrorMetrics, 'redis'>): GatewayStores;
export function openStores(proc: ProcessBoot<'worker'>, storeErrors: Pick<StoreErrorMetrics, 'redis'>): WorkerStores;
export function openStores(proc: ProcessBoot<'reconciler'>, storeErrors: Pick<StoreErrorMetrics, 'redis'>): ReconcilerStores;
export function openStores({ role, config, logger }: ProcessBoot, storeErrors: Pick<StoreErrorMetrics, 'redis'>): ProcessStores {
  const onError = (err: Error) => {
    storeErrors.redis.inc();
    logger.warn({ err }, 'redis connection error');
  };
  const target = redisTargetOf(config);
  const pools = { idleTimeoutMs: config.DB_POOL_IDLE_TIMEOUT_MS };
  if (role === 'gateway') {
    // A buyer waits on these: a command gives up after REDIS_COMMAND_TIMEOUT_MS and its retries, a
    // statement after DB_STATEMENT_TIMEOUT_MS, and the buyer is answered 503 rather than kept waiting.
    const timed = { ...pools, statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS };
    const redis = createRedis(target, { name: role, commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS, onError });
    const prisma = createPrisma(config.DATABASE_URL, config.GATEWAY_DB_POOL_SIZE, 0, timed);
    const dashboardPrisma = createPrisma(config.DATABASE_URL, config.DASHBOARD_DB_POOL_SIZE, 0, timed);
    const jobs = createReconcileJobs(target, config.REDIS_PREFIX);
    return {
      redis,
      prisma,
      dashboardPrisma,
      jobs,
      sales: salesOf(config, logger, { redis, prisma, jobs }),
      dashboardSales: salesOf(config, logger, { redis, prisma: dashboardPrisma, jobs }),
    };
  }
  // No per-command retry limit: the worker's and the reconciler's own loops retry, and an entry is never
  // dropped for it.
  const redis = createRedis(target, {
    name: role,
    commandTimeoutMs: config.REDIS_BACKGROUND_COMMAND_TIMEOUT_MS,
    onError,
    maxRetriesPerRequest: null,
  });
  if (role === 'worker') {
    // 16 prepared statements per connection: the quick pass's two, and room for the careful pass's.
    const prisma = createPrisma(config.DATABASE_URL, config.WORKER_DB_POOL_SIZE, 16, pools);
    return { redis, prisma, sales: salesOf(config, logger, { redis, prisma }) };
  }
  const prisma = createPrisma(config.DATABASE_URL, config.RECONCILER_DB_POOL_SIZE, 0, pools);
  const jobs = createReconcileJobs(target, config.REDIS_PREFIX);
  return { redis, prisma, jobs, sales: salesOf(config, logger, { redis, prisma, jobs }) };
}

/** The connections of a one-shot command (`npm run admin`, `npm run reconcile`), and their close. */
export interface CommandStores extends WorkerStores {
  /** The reconcile queue, when the command asked for it (`reconcileQueue`); closed by the command itself. */
  jobs?: ReconcileJobs;
  close(): Promise<void>;
}

/**
 * The stores a command opens for its one use case: Redis with the background processes' command deadline
 * (a command waits, it answers no buyer), MySQL with a pool of `poolSize`. Nothing waits for either to
 * answer before the use case runs; its first call fails if a store is away.
 */
export function openCommandStores(
  config: ProcessBoot['config'],
  logger: Logger,
  options: { name: string; poolSize: number; reconcileQueue?: boolean },
): CommandStores {
  const redis = createRedis(redisTargetOf(config), { name: options.name, commandTimeoutMs: config.REDIS_BACKGROUND_COMMAND_TIMEOUT_MS });
  const prisma = createPrisma(config.DATABASE_URL, options.poolSize, 0, { idleTimeoutMs: config.DB_POOL_IDLE_TIMEOUT_MS });
  const jobs = options.reconcileQueue ? createReconcileJobs(redisTargetOf(config), config.REDIS_PREFIX) : undefined;
  return {
    redis,
    prisma,
    jobs,
    sales: salesOf(config, logger, { redis, prisma, jobs }),
    async close() {
      // The goodbye waits no longer than a buyer's command would (REDIS_COMMAND_TIMEOUT_MS): a frozen Redis
      // must not hold the command's exit for the background deadline; cut, QUIT fails and ends here.
      const cut = setTimeout(() => redis.disconnect(), config.REDIS_COMMAND_TIMEOUT_MS);
      await redis.quit().catch(() => redis.disconnect());
      clearTimeout(cut);
      await prisma.$disconnect();
    },
  };
}

/** `/readyz`: ready when Redis and MySQL both answer. */
export function storesReadiness({ redis, prisma }: Pick<WorkerStores, 'redis' | 'prisma'>): () => Promise<Readiness> {
  return readinessProbe({ redis: () => redis.ping(), mysql: () => prisma.$queryRaw`SELECT 1` });
}

/** The internal port of a worker or reconciler: /readyz when its Redis and MySQL both answer. */
export function serveStoresPort(
  proc: ProcessBoot,
  source: MetricsSource,
  stores: Pick<WorkerStores, 'redis' | 'prisma'>,
): Promise<InternalPort> {
  return serveInternalPort(proc, source, storesReadiness(stores));
}
